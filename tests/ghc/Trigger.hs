-- Trigger.hs: the program of tests/control/test_ring_triggers.sh (dump-on= on a
-- ring: sink).  Three modes, each posting user messages "tick N" every
-- 10 ms so a dump's time span can be read from it:
--   marker: ticks for 2.5 s, the marker "INCIDENT 42", ticks for 3 s more;
--   gc:     ticks for 1 s, then builds a live heap of some hundred
--           megabytes and calls performMajorGC (a long pause), ticks 2 s;
--   flap:   the marker "FLAP I" every 100 ms for 4 s, with ticks.
-- Prints "done" at the end.  Not responsible for where its eventlog goes.
-- Usage: trigger MODE.  Only base is used.
module Main (main) where

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
            let big = [1 .. 4000000] :: [Int]
            held <- newIORef big
            _ <- evaluate (sum big)
            performMajorGC
            performMajorGC
            readIORef held >>= evaluate . length
            ticks ref 200
        ["flap"] -> forM_ [1 .. 40 :: Int] $ \i -> do
            traceMarkerIO ("FLAP " ++ show i)
            ticks ref 10
        _ -> hPutStrLn stderr "usage: trigger marker|gc|flap" >> exitWith (ExitFailure 2)
    putStrLn "done"
