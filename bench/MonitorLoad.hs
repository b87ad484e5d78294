-- MonitorLoad.hs: an event-heavy program for bench/bench_monitor.sh:
-- two threads (one per capability at -N2) post N user messages each as
-- fast as they can while allocating, with a marker pair around the run,
-- so the eventlog is as dense as a real busy program's gets (scheduler,
-- GC and user events).  Usage: monitor-load N.  Only base is used.
module Main (main) where

import Control.Concurrent
import Control.Monad
import Debug.Trace (traceEventIO, traceMarkerIO)
import System.Environment (getArgs)

main :: IO ()
main = do
    [n] <- map read <$> getArgs
    traceMarkerIO "load start"
    dones <- forM [0, 1 :: Int] $ \w -> do
        done <- newEmptyMVar
        _ <- forkOn w $ do
            forM_ [1 .. n :: Int] $ \i ->
                traceEventIO ("load " ++ show w ++ " " ++ show i)
            putMVar done ()
        return done
    mapM_ takeMVar dones
    traceMarkerIO "load end"
