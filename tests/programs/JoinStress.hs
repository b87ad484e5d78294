{-# LANGUAGE ForeignFunctionInterface #-}
-- JoinStress.hs: a busy -N2 program for consumers that join and leave
-- while the program changes what it records.  Four threads post user
-- events and fork short-lived threads; two threads block in safe foreign
-- calls now and then (OS worker tasks come and go); one thread turns the
-- scheduler and GC classes off and on and asks for a snapshot for every
-- consumer, in a loop.  It prints "ready" once running, marks "end" and
-- prints "done" after SECS seconds.
--
-- Usage: join-stress SECS
import Control.Concurrent
import Control.Monad
import Data.IORef
import Debug.Trace (traceEventIO, traceMarkerIO)
import Foreign.C
import Foreign.Ptr (nullPtr)
import GHC.Conc (labelThread)
import System.IO

foreign import ccall safe "els_ghc_set_classes"
  c_set_classes :: CString -> CString -> CSize -> IO CInt
foreign import ccall safe "els_ghc_snapshot" c_snapshot :: IO CInt
foreign import ccall safe "usleep" c_usleep :: CUInt -> IO CInt

setClasses :: String -> IO ()
setClasses s = withCString s $ \p -> do
  r <- c_set_classes p nullPtr 0
  when (r /= 0) $ hPutStrLn stderr ("els_ghc_set_classes " ++ s ++ ": " ++ show r)

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  running <- newIORef True
  done <- newEmptyMVar
  let worker name body = forkIO $ do
        t <- myThreadId
        labelThread t name
        let loop n = do
              go <- readIORef running
              when go (body n >> loop (n + 1 :: Int))
        loop 0
        putMVar done ()
  forM_ [1 .. 4 :: Int] $ \i -> worker ("poster-" ++ show i) $ \n -> do
    traceEventIO ("poster " ++ show i ++ " " ++ show n)
    threadDelay 3000    -- busy, yet a stream ghc-events reads in seconds
    when (n `mod` 50 == 0) $ do
      v <- newEmptyMVar
      _ <- forkIO (putMVar v $! sum [1 .. n `mod` 1000])
      _ <- takeMVar v
      return ()
  forM_ [1 .. 2 :: Int] $ \i -> worker ("sleeper-" ++ show i) $ \_ ->
    void (c_usleep 2000)
  _ <- worker "toggler" $ \n -> do
    setClasses (["-g", "+g", "-s", "+s"] !! (n `mod` 4))
    when (n `mod` 2 == 0) $ do
      r <- c_snapshot
      when (r /= 0) $ hPutStrLn stderr ("els_ghc_snapshot: " ++ show r)
    threadDelay 5000
  putStrLn "ready"
  _ <- getLine
  writeIORef running False
  replicateM_ 7 (takeMVar done)
  setClasses "+sg"
  traceMarkerIO "end"
  putStrLn "done"
