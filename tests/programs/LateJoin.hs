{-# LANGUAGE CPP, ForeignFunctionInterface #-}
-- LateJoin.hs: a program whose stream is joined mid-run (late joiners,
-- flight-recorder dumps).  Before the join it creates OS worker tasks
-- (threads blocked in safe foreign reads on a pipe, each holding one),
-- labels its threads and emits BYTES bytes of user events, marks "ready",
-- writes its buffers out, then prints "ready" and waits for a line on stdin.  After it, it marks "after-join",
-- releases the blocked threads (their tasks return, and those beyond the
-- RTS's spare workers are deleted), lets its labelled workers finish, marks
-- "end" and exits: a stream that starts mid-run must know about threads and
-- tasks created before it.
--
-- While it waits, a line "mark NAME" marks NAME, writes its buffers out
-- and prints "marked NAME"; built with -DSINK_PACKAGE (GHC.Eventlog.Sink
-- on the path), "dump" marks "before-ringDump", flushes and calls
-- ringDump, printing "dumped PATH" or "ringDump failed: ...".  Any other
-- line goes on.
--
-- Usage: late-join BLOCKED BYTES
import Control.Concurrent
import Control.Monad
import Data.IORef
import Debug.Trace (traceEventIO, traceMarkerIO)
import Foreign
import Foreign.C
import GHC.Conc (labelThread)
import System.Environment (getArgs)
import System.IO
import System.Posix.Types (CSsize (..))
#if defined(SINK_PACKAGE)
import qualified GHC.Eventlog.Sink as Sink
#endif

foreign import ccall unsafe "pipe" c_pipe :: Ptr CInt -> IO CInt
foreign import ccall safe "read" c_read :: CInt -> Ptr Word8 -> CSize -> IO CSsize
foreign import ccall unsafe "write" c_write :: CInt -> Ptr Word8 -> CSize -> IO CSsize
-- The patched RTS's flushEventLog (NULL: the caller holds no capability).
foreign import ccall safe "flushEventLog" c_flushEventLog :: Ptr () -> IO ()

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  [blocked, bytes] <- map read <$> getArgs
  me <- myThreadId
  labelThread me "late-join main"
  (rfd, wfd) <- allocaArray 2 $ \p -> do
    _ <- c_pipe p
    [r, w] <- peekArray 2 p
    return (r, w)
  released <- newEmptyMVar
  forM_ [1 .. blocked] $ \i -> forkIO $ do
    t <- myThreadId
    labelThread t ("blocked-" ++ show i)
    _ <- allocaBytes 1 $ \b -> c_read rfd b 1
    putMVar released ()
  running <- newIORef True
  finished <- newEmptyMVar
  forM_ [1 .. 4 :: Int] $ \i -> forkIO $ do
    t <- myThreadId
    labelThread t ("worker-" ++ show i)
    let loop n = do
          go <- readIORef running
          when go $ do
            when (n `mod` 64 == 0) $ traceEventIO ("worker " ++ show i ++ " " ++ show n)
            _ <- evaluate' (sum [1 .. n `mod` 500 + 100 :: Int])
            yield
            loop (n + 1)
    loop (0 :: Int)
    putMVar finished ()
  let padding = replicate 80 'x'
      emit k = traceEventIO ("before-join " ++ show k ++ " " ++ padding)
  forM_ [1 .. bytes `div` 100] emit
  traceMarkerIO "ready"
  c_flushEventLog nullPtr     -- what came before "ready" is written out
  putStrLn "ready"
  let waitGo = do
        line <- getLine
        case words line of
          ["mark", name] -> do
            traceMarkerIO name
            c_flushEventLog nullPtr
            putStrLn ("marked " ++ name)
            waitGo
#if defined(SINK_PACKAGE)
          ["dump"] -> do
            traceMarkerIO "before-ringDump"
            Sink.flush
            r <- Sink.ringDump
            putStrLn (either (\e -> "ringDump failed: " ++ Sink.errorMessage e)
                             ("dumped " ++) r)
            waitGo
#endif
          _ -> return ()
  waitGo
  traceMarkerIO "after-join"
  replicateM_ blocked $ allocaBytes 1 $ \b -> poke b 0 >> c_write wfd b 1
  replicateM_ blocked (takeMVar released)
  forM_ [1 .. 2000 :: Int] $ \k -> traceEventIO ("after-join " ++ show k)
  writeIORef running False
  replicateM_ 4 (takeMVar finished)
  traceMarkerIO "end"
  putStrLn "done"
  where
    evaluate' x = x `seq` return x
