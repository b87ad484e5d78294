{-# LANGUAGE BangPatterns #-}
-- Service.hs: the service bench/bench_aggr_live.sh watches for an hour:
-- a profiled program that serves "requests" for SECS seconds.  Four
-- labelled workers each take a request about every 5 ms, wrapped in
-- withSpan "request" (one in 20 with a nested withSpan "lookup"), with
-- "batch begin"/"batch stop" markers around every 200 requests and
-- "START flush"/"STOP flush" messages around a periodic flush; each
-- request computes a little and adds an entry to a cache that keeps
-- its last 4,096 entries (a bounded heap) while one entry in 64 goes
-- to a store that is never emptied (a slow leak: its band grows over
-- the hour).  Run profiled (-prof -fprof-auto) with +RTS -hc -p, its
-- censuses and cost-centre samples are the aggregates' load.
--
--     service SECS
import Control.Concurrent
import Control.Monad
import Data.IORef
import Debug.Trace
import GHC.Conc (labelThread)
import GHC.Eventlog.Sink.Span (withSpan)
import System.Environment (getArgs)
import System.Exit (exitFailure)

data Entry = Entry !Int !Int

work :: Int -> Integer
work n = sum [1 .. toInteger (2000 + 300 * n)]

-- The recent entries: at most 4096, the oldest dropped.
remember :: IORef (Int, [Entry]) -> Entry -> IO ()
remember cache e = atomicModifyIORef' cache $ \(n, xs) ->
    if n >= 4096 then ((2048, e : take 2047 xs), ()) else ((n + 1, e : xs), ())

-- The store that is never emptied.
keep :: IORef [Entry] -> Entry -> IO ()
keep store e = atomicModifyIORef' store (\xs -> (e : xs, ()))

request :: IORef (Int, [Entry]) -> IORef [Entry] -> Int -> Int -> IO ()
request cache store w i = withSpan "request" $ do
    let !s = work (i `mod` 17)
        !e = Entry w (fromIntegral (s `mod` 1000003))
    remember cache e
    when (i `mod` 64 == 0) $ keep store e
    when (i `mod` 20 == 0) $ withSpan "lookup" (threadDelay 200)

worker :: IORef (Int, [Entry]) -> IORef [Entry] -> IORef Bool -> Int -> IO ()
worker cache store stop w = go 1
  where
    go !i = do
        done <- readIORef stop
        unless done $ do
            when (i `mod` 200 == 1) $ traceMarkerIO "batch begin"
            request cache store w i
            when (i `mod` 200 == 0) $ traceMarkerIO "batch stop"
            threadDelay 5000
            go (i + 1)

main :: IO ()
main = do
    args <- getArgs
    secs <- case args of
        [s] | [(n, "")] <- reads s -> return (n :: Int)
        _ -> putStrLn "usage: service SECS" >> exitFailure
    cache <- newIORef (0, [])
    store <- newIORef []
    stop <- newIORef False
    finished <- newEmptyMVar
    forM_ [1 .. 4 :: Int] $ \w -> do
        t <- forkIO (worker cache store stop w >> putMVar finished ())
        labelThread t ("worker-" ++ show w)
    flusher <- forkIO $ forever $ do
        threadDelay 1000000
        traceEventIO "START flush"
        (n, _) <- readIORef cache
        n `seq` traceEventIO "STOP flush"
    labelThread flusher "flusher"
    putStrLn "ready"
    threadDelay (secs * 1000000)
    writeIORef stop True
    replicateM_ 4 (takeMVar finished)
    kept <- length <$> readIORef store
    putStrLn ("done " ++ show kept)
