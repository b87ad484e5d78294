-- Control.hs: the program of tests/rts/test_rts_control.sh, with the writer
-- tests/rts/control_writer.c (scheme cttest).  Each mode drives the
-- patched RTS's runtime control (rts/EventLogControl.h) through foreign
-- calls and prints what the shell test needs; the test reads the streams
-- with ghc-events.  Modes:
--
--   toggles   g off/on, s off/on (a thread born while s is off runs after
--             it is back), u off/on, p off/on, f on (off at start-up);
--             prints the classes and RtsFlags.TraceFlags after each step
--   join      labelled threads (blocked and runnable), a bound thread
--             (its own task), then a JOIN snapshot requested from an OS
--             thread the RTS does not know; waits until the writer has it,
--             then the threads run, finish, and a worker task goes away
--   restart   labelled threads, stop, start: the new stream must announce
--             them; then forkProcess: the child's stream
--   sync      SYNC snapshots, synchronous and requested, while threads run
--   bufsize   prints the buffer size, changes it at runtime, posts a lot
--   stress    one thread toggles classes and requests snapshots in a loop
--             while four threads post, for N rounds
--
-- Exit 0; 1 with a line on stderr if a check inside the program fails.
module Main (main) where

import Control.Concurrent
import Control.Exception (evaluate)
import Control.Monad
import Data.IORef
import Debug.Trace (traceEventIO, traceMarkerIO)
import Foreign.C.Types
import Foreign.Ptr (Ptr, nullPtr)
import GHC.Conc (labelThread, par, pseq)
import qualified GHC.RTS.Flags as F
import System.Environment (getArgs)
import System.Exit
import System.IO
import System.Mem (performGC)
import System.Posix.Process (forkProcess, getProcessStatus)

foreign import ccall safe "setTraceFlag" c_setTraceFlag :: CInt -> CBool -> IO ()
foreign import ccall unsafe "getTraceFlag" c_getTraceFlag :: CInt -> IO CBool
foreign import ccall safe "snapshotEventLog" c_snapshot :: Ptr () -> CInt -> IO ()
foreign import ccall safe "requestEventLogSnapshot" c_request :: CInt -> IO ()
foreign import ccall safe "ct_request_from_foreign_thread" c_requestForeign :: CInt -> IO ()
foreign import ccall unsafe "ct_joins_written" c_joins :: IO CInt
foreign import ccall unsafe "ct_snapshot_units_written" c_snapshotUnits :: IO CInt
foreign import ccall unsafe "ct_bad_units" c_bad :: IO CInt
foreign import ccall safe "ct_start" c_start :: IO CInt
foreign import ccall safe "ct_end" c_end :: IO ()
foreign import ccall unsafe "getEventLogBufferSize" c_bufSize :: IO CSize
foreign import ccall safe "setEventLogBufferSize" c_setBufSize :: CSize -> IO CInt
foreign import ccall safe "flushEventLog" c_flush :: Ptr () -> IO ()

-- RUNTIME_TRACE_FLAG
sched, gc, sparksSampled, sparksFull, user :: CInt
sched = 0
gc = 1
sparksSampled = 3
sparksFull = 4
user = 5

setClass :: CInt -> Bool -> IO ()
setClass f on = c_setTraceFlag f (if on then 1 else 0)

classes :: IO String
classes = do
  on <- forM [0 .. 5] c_getTraceFlag
  pure [l | (l, b) <- zip "sgnpfu" on, b /= 0]

report :: String -> IO ()
report step = do
  cs <- classes
  t <- F.getTraceFlags
  putStrLn $ step ++ ": classes " ++ cs ++ " flags "
    ++ concat [n | (n, True) <-
         [ ("s", F.traceScheduler t), ("g", F.traceGc t), ("p", F.sparksSampled t)
         , ("f", F.sparksFull t), ("u", F.user t) ]]

die' :: String -> IO a
die' msg = hPutStrLn stderr ("Control: " ++ msg) >> exitWith (ExitFailure 1)

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  args <- getArgs
  case args of
    ["toggles"] -> toggles
    ["join"] -> joinMode
    ["restart"] -> restartMode
    ["sync"] -> syncMode
    ["bufsize", n] -> bufsizeMode (read n)
    ["stress", n] -> stressMode (read n)
    _ -> die' "usage: Control toggles|join|restart|sync|bufsize N|stress N"
  bad <- c_bad
  when (bad /= 0) $ die' (show bad ++ " bad units")

fib :: Int -> Int
fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

toggles :: IO ()
toggles = do
  report "start"
  performGC
  setClass gc False
  report "g off"
  replicateM_ 3 performGC
  setClass gc True
  performGC
  -- A thread born while the scheduler class is off runs once it is back.
  setClass sched False
  go <- newEmptyMVar
  done <- newEmptyMVar
  t <- forkIO $ takeMVar go >> evaluate (fib 15) >> putMVar done ()
  labelThread t "born-while-s-off"
  yield
  replicateM_ 3 (forkIO (return ()) >> yield)
  setClass sched True
  putMVar go ()
  takeMVar done
  setClass user False
  traceEventIO "hidden-while-u-off"
  setClass user True
  traceEventIO "visible-after-u-on"
  setClass sparksSampled False
  replicateM_ 2 performGC
  setClass sparksSampled True
  performGC
  setClass sparksFull True
  report "f on"
  let xs = map fib [18 .. 24]
  _ <- evaluate (foldr (\x acc -> x `par` acc) () xs)
  _ <- evaluate (sum xs)
  report "end"

joinMode :: IO ()
joinMode = do
  gate <- newEmptyMVar
  done <- newEmptyMVar
  ts <- forM [1 .. 4 :: Int] $ \i -> do
    t <- forkIO $ readMVar gate >> evaluate (fib 20) >> putMVar done ()
    labelThread t ("joiner-label-" ++ show i)
    pure t
  -- A bound thread: its own OS thread and task.
  bgate <- newEmptyMVar
  _ <- forkOS $ takeMVar bgate >> putMVar done ()
  me <- myThreadId
  labelThread me "joiner-main"
  yield
  c_requestForeign 0
  waitFor ((> 0) <$> c_joins)
  putStrLn "joined"
  putMVar gate ()
  putMVar bgate ()
  replicateM_ (length ts + 1) (takeMVar done)
  traceMarkerIO "after-join"
  performGC

waitFor :: IO Bool -> IO ()
waitFor cond = do
  ok <- cond
  unless ok (threadDelay 1000 >> waitFor cond)

restartMode :: IO ()
restartMode = do
  gate <- newEmptyMVar
  done <- newEmptyMVar
  forM_ [1 .. 3 :: Int] $ \i -> do
    t <- forkIO $ readMVar gate >> evaluate (fib 18) >> putMVar done ()
    labelThread t ("restart-label-" ++ show i)
  bgate <- newEmptyMVar
  _ <- forkOS $ takeMVar bgate >> putMVar done ()
  yield
  c_end
  r <- c_start
  when (r /= 1) $ die' "restart failed"
  putMVar gate ()
  putMVar bgate ()
  replicateM_ 4 (takeMVar done)
  traceMarkerIO "after-restart"
  pid <- forkProcess $ do
    t <- forkIO (traceMarkerIO "child-thread")
    labelThread t "child-label"
    _ <- evaluate (fib 18)
    threadDelay 1000
    traceMarkerIO "child-done"
  st <- getProcessStatus True False pid
  putStrLn ("child: " ++ show st)

-- Start n threads labelled NAME-I, each running step I K for K = 0, 1, ...
-- until the returned action is called, which waits for them to finish.
workers :: String -> Int -> (Int -> Int -> IO ()) -> IO (IO ())
workers name n step = do
  stop <- newIORef False
  done <- newEmptyMVar
  forM_ [1 .. n] $ \i -> do
    t <- forkIO $ do
      let loop k = do
            s <- readIORef stop
            unless s (step i k >> loop (k + 1))
      loop 0
      putMVar done ()
    labelThread t (name ++ "-" ++ show i)
  pure (writeIORef stop True >> replicateM_ n (takeMVar done))

syncMode :: IO ()
syncMode = do
  finish <- workers "sync-label" 3 $ \i k -> do
    traceEventIO ("sync-worker " ++ show i ++ " " ++ show k)
    _ <- evaluate (fib 12)
    yield
  forM_ [1 .. 5 :: Int] $ \_ -> do
    c_snapshot nullPtr 1
    c_request 1
    yield
  before <- c_snapshotUnits
  c_snapshot nullPtr 1
  after <- c_snapshotUnits
  when (after <= before) $ die' "a synchronous SYNC snapshot wrote no unit"
  finish
  putStrLn "synced"

bufsizeMode :: Int -> IO ()
bufsizeMode n = do
  s0 <- c_bufSize
  putStrLn ("buffer " ++ show s0)
  forM_ [1 .. n] $ \i -> traceEventIO ("bufsize-a " ++ show i)
  r <- c_setBufSize (128 * 1024)
  s1 <- c_bufSize
  putStrLn ("set " ++ show r ++ " buffer " ++ show s1)
  bad <- c_setBufSize 1000
  putStrLn ("too small " ++ show bad)
  forM_ [1 .. n] $ \i -> traceEventIO ("bufsize-b " ++ show i)

stressMode :: Int -> IO ()
stressMode rounds = do
  finish <- workers "stress-label" 4 $ \i k -> do
    traceEventIO ("stress " ++ show i ++ " " ++ show k)
    when (k `mod` 50 == 0) $ void (forkIO (void (evaluate (fib 10))))
    void (evaluate (fib 10))
  forM_ [1 .. rounds] $ \r -> do
    let f = [sched, gc, user, sparksSampled, sparksFull] !! (r `mod` 5)
    setClass f False
    c_request (fromIntegral (r `mod` 2))
    when (r `mod` 3 == 0) $ c_snapshot nullPtr 1
    setClass f True
    when (r `mod` 7 == 0) $ c_flush nullPtr
  finish
  putStrLn "stressed"
