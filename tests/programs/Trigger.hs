-- Trigger.hs: the program of tests/recorder/test_ring_triggers.sh (dump-on= on a
-- ring: sink) and of the alert tests (tests/monitor/test_alert_*.sh).
-- Its modes each post user messages "tick N" every 10 ms so a dump's
-- time span can be read from it:
--   marker: ticks for 2.5 s, the marker "INCIDENT 42", ticks for 3 s more;
--   gc:     ticks for 1 s, then builds a live heap of some hundred
--           megabytes and calls performMajorGC (a long pause), ticks 2 s;
--   flap:   the marker "FLAP I" every 100 ms for 4 s, with ticks;
--   pauses: ticks for 0.5 s, a long pause as in gc, "ready" on stdout,
--           then a long pause after each second of ticks until its
--           stdin closes.
-- Prints "done" at the end.  Not responsible for where its eventlog goes.
-- Usage: trigger MODE.  Only base is used.
module Main (main) where

import Control.Concurrent (forkIO)
import Control.Exception (evaluate)
import Control.Monad
import Data.IORef
import Debug.Trace (traceEventIO, traceMarkerIO)
import System.Environment (getArgs)
import System.Exit
import System.IO
import System.Mem (performMajorGC)
import Control.Concurrent (threadDelay)

ticks :: IORef Int -> Int -> IO ()
ticks ref n = replicateM_ n $ do
    i <- atomicModifyIORef' ref (\k -> (k + 1, k))
    traceEventIO ("tick " ++ show i)
    threadDelay 10000

-- A live heap of some hundred megabytes (4 million Ints, and k more),
-- collected twice while held: a long GC pause.
longPause :: Int -> IO ()
longPause k = do
    let big = [1 .. 4000000 + k] :: [Int]
    held <- newIORef big
    _ <- evaluate (sum big)
    performMajorGC
    performMajorGC
    readIORef held >>= void . evaluate . length

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    args <- getArgs
    ref <- newIORef 0
    case args of
        ["marker"] -> do
            ticks ref 250
            traceMarkerIO "INCIDENT 42"
            ticks ref 300
        ["gc"] -> do
            ticks ref 100
            longPause 0
            ticks ref 200
        ["pauses"] -> do
            ticks ref 50
            longPause 0
            putStrLn "ready"
            _ <- forkIO $ forM_ [1 ..] $ \k -> ticks ref 100 >> longPause k
            void (getContents >>= evaluate . length)
        ["flap"] -> forM_ [1 .. 40 :: Int] $ \i -> do
            traceMarkerIO ("FLAP " ++ show i)
            ticks ref 10
        _ -> hPutStrLn stderr "usage: trigger marker|gc|flap|pauses" >> exitWith (ExitFailure 2)
    putStrLn "done"
