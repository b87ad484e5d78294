{-# LANGUAGE BangPatterns #-}
-- The zoomable timeline's test program (tests/monitor/test_zoom.sh):
-- labelled workers on -N2 that allocate (collections), hand results over
-- an MVar to a labelled consumer (threads blocked on an MVar, yielding,
-- finishing), mark their steps (traceMarkerIO "worker W step I") and
-- their spans ("START wW" / "STOP wW" user messages), and one marker
-- "zoom-target" half-way through the run, which the test zooms onto.
import Control.Concurrent
import Control.Monad
import Debug.Trace
import GHC.Conc (labelThread)

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
    traceMarkerIO "zoom-target"
    replicateM_ 4 (takeMVar done)
    traceMarkerIO "the end"
    putStrLn "done"
