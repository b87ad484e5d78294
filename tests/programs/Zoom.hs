{-# LANGUAGE BangPatterns #-}
-- The zoomable timeline's test program (tests/monitor/test_zoom.sh):
-- labelled workers on -N2 that allocate (collections), hand results over
-- an MVar to a labelled consumer (threads blocked on an MVar, yielding,
-- finishing), mark their steps (traceMarkerIO "worker W step I") and
-- their spans ("START wW" / "STOP wW" user messages), and, half-way
-- through the run, zoomTargets markers "zoom-target" 2 ms or more apart, one of
-- which the test zooms onto (see Note [Zoom targets]).
--
-- Note [Zoom targets]
-- ~~~~~~~~~~~~~~~~~~~
-- The test needs, within about 1 ms of the marker it zooms onto, some
-- threads' running or GC intervals a few pixels wide, a thread stop,
-- a HEC's spark counters reporting sparks created since its previous
-- report (also in the window) and the heap's size and live bytes.  One marker cannot promise
-- that: a machine busy elsewhere can stop the program (or stretch one
-- collection) for longer than the whole window.  So the main thread
-- posts several targets, each right after two major collections it
-- asks for (performGC: every HEC's spark counters and the heap's figures
-- land just before the marker, twice, so that the window holds a HEC's
-- report and the one before it; the nurseries are fresh, so no other
-- collection is likely in the window), between which it sparks some work
-- (`par`, unevaluated: sparks created on its HEC, still in the pool at
-- the second collection) that it sums after the marker (the other HEC
-- converts some).  The test's driver picks the first target whose
-- window ghc-events shows holding all of the above (tests/monitor/zoom.js)
-- and checks the page there; what the page must show is still read from
-- ghc-events only.
import Control.Concurrent
import Control.Exception (evaluate)
import Control.Monad
import Debug.Trace
import GHC.Conc (labelThread, par)
import System.Mem (performGC)

zoomTargets :: Int
zoomTargets = 40

fib :: Int -> Int
fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

-- Spark every element (unevaluated: the sparks wait in the pool).
sparkAll :: [Int] -> ()
sparkAll [] = ()
sparkAll (y : ys) = y `par` sparkAll ys

main :: IO ()
main = do
    mv <- newEmptyMVar
    done <- newEmptyMVar
    half <- newEmptyMVar
    forM_ [1 .. 4 :: Int] $ \w -> do
        t <- forkIO $ do
            forM_ [1 .. 60 :: Int] $ \i -> do
                traceEventIO ("START w" ++ show w)
                let !s = sum [1 .. toInteger (3000 * w + i)]
                when (i `mod` 10 == 0) $
                    traceMarkerIO ("worker " ++ show w ++ " step " ++ show i)
                when (w == 1 && i == 30) $ putMVar half ()
                putMVar mv s
                traceEventIO ("STOP w" ++ show w)
            putMVar done ()
        labelThread t ("worker-" ++ show w)
    consumer <- forkIO $ forever $ do
        x <- takeMVar mv
        x `seq` threadDelay 200
    labelThread consumer "consumer"
    takeMVar half
    forM_ [1 .. zoomTargets] $ \k -> do
        let xs = [fib (14 + j `mod` 4) + k | j <- [0 .. 31 :: Int]]
        performGC
        _ <- evaluate (sparkAll xs)
        performGC
        traceMarkerIO "zoom-target"
        _ <- evaluate (sum xs)
        threadDelay 2000
    replicateM_ 4 (takeMVar done)
    traceMarkerIO "the end"
    putStrLn "done"
