-- Busy.hs: the live monitor's test program (tests/monitor/test_top.sh,
-- test_serve.sh, test_metrics.sh).
--
-- Runs PHASES phases; each is a pair of markers "phase I start" and
-- "phase I end" around two threads (one per capability with -N2) that
-- allocate and post 100 user messages "work I W J" each, then a major
-- GC.  After the last phase it posts the marker "work done", prints
-- "ready" and waits for a line or end-of-file on stdin before exiting, so
-- a test sees a live program with a known, finished amount of work (run
-- it with -I0: no idle GC changes the counts while it waits).  It is not
-- responsible for where its eventlog goes (+RTS -l or --eventlog-sink).
-- Usage: busy PHASES.  Only base is used.
module Main (main) where

import Control.Concurrent
import Control.Exception (IOException, try)
import Control.Monad
import Debug.Trace (traceEventIO, traceMarkerIO)
import System.Environment (getArgs)
import System.Exit
import System.IO
import System.Mem (performMajorGC)

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    args <- getArgs
    phases <- case args of
        [p] | [(v, "")] <- reads p, v >= (1 :: Int) -> return v
        _ -> hPutStrLn stderr "usage: busy PHASES" >> exitWith (ExitFailure 2)
    forM_ [1 .. phases] $ \i -> do
        traceMarkerIO ("phase " ++ show i ++ " start")
        dones <- forM [0, 1 :: Int] $ \w -> do
            done <- newEmptyMVar
            _ <- forkOn w $ do
                forM_ [1 .. 100 :: Int] $ \j -> do
                    let s = sum [1 .. toInteger (100 * j + w)]
                    s `seq` traceEventIO ("work " ++ show i ++ " " ++ show w ++ " " ++ show j)
                putMVar done ()
            return done
        mapM_ takeMVar dones
        performMajorGC
        traceMarkerIO ("phase " ++ show i ++ " end")
    traceMarkerIO "work done"
    putStrLn "ready"
    r <- try getLine :: IO (Either IOException String)
    either (const (return ())) (const (return ())) r
