-- Sparks.hs: the program of tests/monitor/test_ended.sh (the monitor on a
-- flight recorder's dump and on a stream that ended).  ROUNDS rounds,
-- each sparking 64 small computations (`par`, so the spark counters move)
-- and posting 40 user messages "fill I J" (so the eventlog grows by some
-- kilobytes a round and a small ring overflows); after the first BEFORE
-- rounds the marker "INCIDENT", then the rest.  Prints "done" at the end.
-- Not responsible for where its eventlog goes.
-- Usage: sparks BEFORE AFTER.  Only base is used.
module Main (main) where

import Control.Exception (evaluate)
import Control.Monad
import Debug.Trace (traceEventIO, traceMarkerIO)
import GHC.Conc (par, pseq)
import System.Environment (getArgs)

fib :: Int -> Int
fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

-- Spark every element, then sum them.
sparked :: [Int] -> Int
sparked xs = go xs `pseq` sum xs
  where
    go [] = ()
    go (y : ys) = y `par` go ys

oneRound :: Int -> IO ()
oneRound i = do
    _ <- evaluate (sparked [fib (12 + j `mod` 4) + i | j <- [0 .. 63 :: Int]])
    forM_ [1 .. 40 :: Int] $ \j ->
        traceEventIO ("fill " ++ show i ++ " " ++ show j ++ " " ++ replicate 60 'x')

main :: IO ()
main = do
    [before, after] <- map read <$> getArgs
    mapM_ oneRound [1 .. before]
    traceMarkerIO "INCIDENT"
    mapM_ oneRound [before + 1 .. before + after]
    putStrLn "done"
