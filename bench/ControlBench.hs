-- ControlBench.hs: what runtime control of the patched RTS's eventlog
-- costs (bench/bench_control.sh builds and runs it).  With THREADS live
-- Haskell threads (blocked on an MVar, each labelled), it times, REPS
-- times each and prints the median and maximum in microseconds:
--   sync      snapshotEventLog(NULL, SYNC): every capability stopped,
--             the labels and states of every thread written, resumed;
--   restart   endEventLogging + startEventLogging: the new stream's full
--             snapshot (every thread created again, labelled), i.e. what
--             a JOIN snapshot costs, plus the stop and the header;
--   toggle    setTraceFlag(TRACE_USER, off) then on: two stops;
--   flush     flushEventLog(NULL), for comparison: one stop, no snapshot.
-- The call's duration is the pause every Haskell thread sees (the calls
-- stop every capability for most of it).  Not a test: it asserts nothing.
module Main (main) where

import Control.Concurrent
import Control.Monad
import Data.List (sort)
import Foreign.C.Types
import Foreign.Ptr (Ptr, nullPtr)
import GHC.Clock (getMonotonicTimeNSec)
import GHC.Conc (labelThread)
import System.Environment (getArgs)
import System.IO

foreign import ccall safe "snapshotEventLog" c_snapshot :: Ptr () -> CInt -> IO ()
foreign import ccall safe "setTraceFlag" c_setTraceFlag :: CInt -> CBool -> IO ()
foreign import ccall safe "flushEventLog" c_flush :: Ptr () -> IO ()
foreign import ccall safe "endEventLogging" c_end :: IO ()
foreign import ccall safe "bench_start_eventlog" c_start :: IO CInt

timeIt :: IO () -> IO Double
timeIt act = do
  t0 <- getMonotonicTimeNSec
  act
  t1 <- getMonotonicTimeNSec
  pure (fromIntegral (t1 - t0) / 1000)

report :: String -> Int -> [Double] -> IO ()
report name n xs = do
  let s = sort xs
      med = s !! (length s `div` 2)
  putStrLn $ "| " ++ name ++ " | " ++ show n ++ " | " ++ show (round med :: Int)
    ++ " | " ++ show (round (last s) :: Int) ++ " |"

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  [nThreads, reps] <- map read <$> getArgs
  gate <- newEmptyMVar :: IO (MVar ())
  forM_ [1 .. nThreads] $ \i -> do
    t <- forkIO (readMVar gate)
    labelThread t ("bench-thread-" ++ show i)
  yield
  sync <- replicateM reps (timeIt (c_snapshot nullPtr 1))
  report "SYNC snapshot" nThreads sync
  restart <- replicateM reps (timeIt (c_end >> void c_start))
  report "restart (full snapshot)" nThreads restart
  toggle <- replicateM reps (timeIt (c_setTraceFlag 5 0 >> c_setTraceFlag 5 1))
  report "toggle u off+on (2 stops)" nThreads toggle
  flush <- replicateM reps (timeIt (c_flush nullPtr))
  report "flushEventLog" nThreads flush
  putMVar gate ()
