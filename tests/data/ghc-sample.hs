import Control.Concurrent
import Control.Monad
import Debug.Trace
main :: IO ()
main = do
    done <- newEmptyMVar
    forM_ [1, 2 :: Int] $ \w -> forkIO $ do
        forM_ [1 .. 200 :: Int] $ \i -> traceEventIO ("sample " ++ show w ++ " " ++ show i)
        traceMarkerIO ("worker " ++ show w ++ " done")
        putMVar done ()
    replicateM_ 2 (takeMVar done)
