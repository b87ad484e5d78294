-- Pauses.hs: the program of tests/monitor/test_alert_capture.sh, a
-- program whose GC pauses are long: posts "tick N" every 10 ms and,
-- every second or so, builds a live heap of some hundred megabytes
-- (a list of 4 million Ints, held while it is collected) and calls
-- performMajorGC twice: pauses of tens to hundreds of milliseconds.
-- Prints "ready" after its first long pause and runs until its stdin
-- closes, then prints "done".  Only base is used.  Not responsible for
-- where its eventlog goes (tests/ghc/tee_main.c, beside it, gives it two
-- writers).
module Main (main) where

import Control.Concurrent (forkIO, threadDelay)
import Control.Exception (evaluate)
import Control.Monad
import Data.IORef
import Debug.Trace (traceEventIO)
import System.IO
import System.Mem (performMajorGC)

ticks :: IORef Int -> Int -> IO ()
ticks ref n = replicateM_ n $ do
    i <- atomicModifyIORef' ref (\k -> (k + 1, k))
    traceEventIO ("tick " ++ show i)
    threadDelay 10000

longPause :: Int -> IO ()
longPause round' = do
    let big = [1 .. 4000000 + round'] :: [Int]
    held <- newIORef big
    _ <- evaluate (sum big)
    performMajorGC
    performMajorGC
    readIORef held >>= void . evaluate . length

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    ref <- newIORef 0
    ticks ref 50
    longPause 0
    putStrLn "ready"
    _ <- forkIO $ forM_ [1 ..] $ \r -> ticks ref 100 >> longPause r
    _ <- getContents >>= evaluate . length
    putStrLn "done"
