-- Spans.hs: markers and user events in pairs, for tests/otlp/test_otlp.sh:
-- "req start"/"req end" markers around work of varying length, nested
-- "START phase"/"STOP phase" user events, a labelled thread and two
-- plain messages.
import Control.Concurrent
import Control.Monad
import Debug.Trace
import GHC.Conc (labelThread, myThreadId)

work :: Int -> IO ()
work n = do
    let s = sum [1 .. n * 20000]
    s `seq` return ()

main :: IO ()
main = do
    me <- myThreadId
    labelThread me "spans-main"
    traceEventIO "hello from Spans"
    -- One worker at a time, so that every "req end" closes the one open
    -- "req start" whatever capability each ran on.
    forM_ [1, 2 :: Int] $ \w -> do
      done <- newEmptyMVar
      _ <- forkIO $ do
        forM_ [1 .. 5 :: Int] $ \i -> do
            traceMarkerIO "req start"
            traceEventIO "START phase"
            work (i * w)
            traceEventIO "STOP phase"
            threadDelay (1000 * i)
            traceMarkerIO "req end"
        putMVar done ()
      takeMVar done
    traceEventIO "bye from Spans"
