{-# LANGUAGE BangPatterns #-}
-- Lifecycle.hs: the Haskell side of tests/rts/test_rts_lifecycle.sh.  Drives
-- the patched RTS's eventlog through stop, start, flush and fork while
-- capabilities run, with the checking writer of lifecycle_writer.c
-- (+RTS --eventlog-sink=lctest:PREFIX).  Each mode prints what the test
-- needs to find in the streams and ends with "violations: N" (the
-- writer's count of broken promises).  It checks no stream itself.
module Main (main) where

import Control.Concurrent
import Control.Exception (evaluate)
import Control.Monad
import Data.IORef
import Debug.Trace (traceEventIO)
import Foreign.C.Types
import GHC.Conc (labelThread)
import System.Environment (getArgs)
import System.Exit
import System.IO
import System.Posix.Process (ProcessStatus (..), forkProcess, getProcessStatus)

foreign import ccall safe "lc_start" lcStart :: IO CInt
foreign import ccall safe "lc_end" lcEnd :: IO ()
foreign import ccall safe "lc_flush_locked" lcFlushLocked :: IO ()
foreign import ccall safe "lc_flush_null" lcFlushNull :: IO ()
foreign import ccall unsafe "lc_violations" lcViolations :: IO CInt
foreign import ccall unsafe "lc_units" lcUnits :: CInt -> IO CLong

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  args <- getArgs
  case args of
    ["setcaps"] -> setCaps
    ["stress", k] -> stress (read k)
    ["busy"] -> busy
    ["idle"] -> idle
    ["fork", n] -> forks (read n)
    ["tiny"] -> traceEventIO "tiny"
    _ -> die "usage: lifecycle setcaps | stress K | busy | idle | fork N | tiny"
  v <- lcViolations
  flushes <- lcUnits 2
  putStrLn ("flush units: " ++ show flushes)
  putStrLn ("violations: " ++ show v)

start :: IO ()
start = do
  r <- lcStart
  when (r /= 1) $ die "lc_start: the eventlog did not start"

-- forkOn every capability in caps, wait for all.
onEach :: [Int] -> (Int -> IO ()) -> IO ()
onEach caps act = do
  dones <- forM caps $ \c -> do
    mv <- newEmptyMVar
    _ <- forkOn c (act c >> putMVar mv ())
    return mv
  mapM_ takeMVar dones

-- A thread doing act over and over until stop is set; the MVar is filled
-- when it has finished.
untilStopped :: IORef Bool -> IO () -> IO (MVar ())
untilStopped stop act = do
  mv <- newEmptyMVar
  let go = readIORef stop >>= \s -> unless s (act >> go)
  _ <- forkIO (go >> putMVar mv ())
  return mv

-- Stop, grow to 6 capabilities and make scheduler events on each (many
-- full buffers' worth) while stopped, start again, post from every
-- capability.  The stopped-period threads are printed so that the test
-- can check that none of their events reached a stream.
setCaps :: IO ()
setCaps = do
  forM_ [1 .. 1000 :: Int] $ \i -> traceEventIO ("before " ++ show i)
  lcEnd
  setNumCapabilities 6
  tids <- newIORef []
  onEach [0 .. 5] $ \c -> do
    t <- myThreadId
    labelThread t ("while-stopped " ++ show c)
    atomicModifyIORef' tids (\ts -> (t : ts, ()))
    replicateM_ 60000 yield
  ts <- readIORef tids
  putStrLn ("stopped-threads: " ++ unwords [drop 9 (show t) | t <- ts])
  start
  onEach [0 .. 5] $ \c ->
    forM_ [1 .. 2000 :: Int] $ \i -> traceEventIO ("after " ++ show c ++ " " ++ show i)
  putStrLn "setcaps done"

-- Two posting threads, a thread flushing with a capability held (through
-- rts_lock), one flushing without, while the main thread stops and starts
-- the eventlog k times.
stress :: Int -> IO ()
stress k = do
  stop <- newIORef False
  let loop = untilStopped stop
  posters <- forM [1 .. 2 :: Int] $ \p -> do
    n <- newIORef (0 :: Int)
    loop $ do
      i <- atomicModifyIORef' n (\x -> (x + 1, x))
      traceEventIO ("stress " ++ show p ++ " " ++ show i)
      _ <- evaluate (length (show i))
      return ()
  f1 <- loop lcFlushLocked
  f2 <- loop lcFlushNull
  forM_ [1 .. k] $ \_ -> do
    lcEnd
    start
  writeIORef stop True
  mapM_ takeMVar (f1 : f2 : posters)
  putStrLn ("stress done: " ++ show k ++ " restarts")

-- One thread that never idles (allocates in a tight loop) until a line
-- arrives on stdin; the marker it posted first must reach the stream
-- while it runs.
busy :: IO ()
busy = do
  stop <- newIORef False
  done <- newEmptyMVar
  _ <- forkIO $ do
    traceEventIO "busy-marker"
    -- Allocates (so that it can be interrupted) but never blocks.
    let go :: Int -> IO ()
        go !i = do
          s <- readIORef stop
          unless s $ evaluate (length (show i)) >> go (i + 1)
    go 0
    putMVar done ()
  putStrLn "busy running"
  _ <- getLine
  writeIORef stop True
  takeMVar done
  putStrLn "busy done"

-- Posts a marker and waits on stdin: every capability idle.
idle :: IO ()
idle = do
  traceEventIO "idle-marker"
  putStrLn "idle running"
  _ <- getLine
  putStrLn "idle done"

-- forkProcess n times while other threads flush the eventlog (with and
-- without a capability); every child posts and exits.
forks :: Int -> IO ()
forks n = do
  stop <- newIORef False
  let loop = untilStopped stop
  f1 <- loop lcFlushNull
  f2 <- loop lcFlushLocked
  pids <- forM [1 .. n] $ \i -> do
    pid <- forkProcess (traceEventIO ("child " ++ show i))
    st <- getProcessStatus True False pid
    case st of
      Just (Exited ExitSuccess) -> return pid
      _ -> die ("child " ++ show i ++ " ended with " ++ show st)
  writeIORef stop True
  mapM_ takeMVar [f1, f2]
  putStrLn ("children: " ++ unwords (map show pids))
