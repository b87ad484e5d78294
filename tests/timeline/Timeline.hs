{-# LANGUAGE BangPatterns #-}
-- The timeline's test program: labelled workers on -N2 that allocate
-- (collections), hand results over an MVar to a labelled consumer
-- (threads blocked on an MVar, yielding, finishing), and mark their steps
-- (traceMarkerIO "worker W step I") and their spans ("START wW" /
-- "STOP wW" user messages).
import Control.Concurrent
import Control.Monad
import Debug.Trace
import GHC.Conc (labelThread)

main :: IO ()
main = do
    mv <- newEmptyMVar
    done <- newEmptyMVar
    forM_ [1 .. 4 :: Int] $ \w -> do
        t <- forkIO $ do
            forM_ [1 .. 40 :: Int] $ \i -> do
                traceEventIO ("START w" ++ show w)
                let !s = sum [1 .. toInteger (3000 * w + i)]
                when (i `mod` 10 == 0) $
                    traceMarkerIO ("worker " ++ show w ++ " step " ++ show i)
                putMVar mv s
                traceEventIO ("STOP w" ++ show w)
            putMVar done ()
        labelThread t ("worker-" ++ show w)
    consumer <- forkIO $ forever $ do
        x <- takeMVar mv
        x `seq` threadDelay 200
    labelThread consumer "consumer"
    replicateM_ 4 (takeMVar done)
    traceMarkerIO "the end"
