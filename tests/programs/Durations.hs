{-# LANGUAGE BangPatterns #-}
-- The aggregates' test program (tests/timeline/test_timeline_aggr.sh):
-- labelled workers on -N2 serve "requests" wrapped in withSpan
-- "request" (some nested in another), each adding entries to a cache
-- that is never emptied (the leak: its band grows at every census);
-- "phase begin"/"phase stop" markers and "START job"/"STOP job" messages
-- around each worker's halves; five withSpan "failing" whose action
-- throws (their end markers must still be posted).  The cache is kept
-- to the end (a stable pointer), so that the last census shows the leak.
import Control.Concurrent
import Control.Exception
import Control.Monad
import Data.IORef
import Debug.Trace
import Foreign.StablePtr (newStablePtr)
import GHC.Conc (labelThread)
import GHC.Eventlog.Sink.Span (withSpan)

data Entry = Entry !Int !Int !Int

-- The cache's new entries, built strictly onto the old ones.
leakEntries :: Int -> Int -> Int -> [Entry] -> [Entry]
leakEntries _ _ 0 acc = acc
leakEntries w i k acc = let !e = Entry w i k in leakEntries w i (k - 1) (e : acc)

leak :: IORef [Entry] -> Int -> Int -> IO ()
leak cache w i = atomicModifyIORef' cache (\xs -> (leakEntries w i 400 xs, ()))

work :: Int -> Integer
work n = sum [1 .. toInteger (20000 + 3000 * n)]

request :: IORef [Entry] -> Int -> Int -> IO ()
request cache w i = withSpan "request" $ do
    let !s = work (i `mod` 13)
    leak cache w i
    when (i `mod` 25 == 0) $ withSpan "request" (threadDelay 500)
    threadDelay (200 * (i `mod` 9))
    s `seq` return ()

main :: IO ()
main = do
    cache <- newIORef []
    -- The cache outlives main: the RTS's census at exit still holds it.
    _ <- newStablePtr cache
    done <- newEmptyMVar
    traceMarkerIO "phase begin"
    forM_ [1 .. 3 :: Int] $ \w -> do
        t <- forkIO $ do
            forM_ [1, 2 :: Int] $ \half -> do
                traceEventIO "START job"
                forM_ [1 .. 60 :: Int] $ \j -> request cache w (60 * (half - 1) + j)
                traceEventIO "STOP job"
            putMVar done ()
        labelThread t ("worker-" ++ show w)
    forM_ [1 .. 5 :: Int] $ \_ -> do
        r <- try (withSpan "failing" (throwIO (userError "refused")))
        either (\e -> const (return ()) (e :: IOException)) return r
    replicateM_ 3 (takeMVar done)
    traceMarkerIO "phase stop"
    n <- length <$> readIORef cache
    putStrLn ("done " ++ show n)
