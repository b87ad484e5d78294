-- ProfFiles.hs: a program for tests/tools/test_profile_files.sh and
-- tests/rts/test_no_profile_files.sh that runs on its own for a second or
-- two and keeps a growing structure alive, so that one run gives the
-- RTS's .hp and .prof and an eventlog to rebuild them from.  Two cost
-- centres share the time unevenly ("pf_heavy" about three times
-- "pf_light"), so that the top of the time profile is clear; "pf_keep"
-- holds the live data the heap profile shows.
--
-- With the argument "hold" it works twice: after the first round it
-- prints "worked" and waits for a line on stdin (a consumer may look at
-- what it received so far, or join late), then runs the second round.
module Main (main) where

import Control.Exception (evaluate)
import Control.Monad (foldM)
import System.Environment (getArgs)
import System.IO (hFlush, stdout)

main :: IO ()
main = do
    args <- getArgs
    kept <- work
    if args == ["hold"]
        then do
            putStrLn "worked" >> hFlush stdout
            _ <- getLine
            kept2 <- work
            print (length kept + length kept2)
        else print (length kept)

work :: IO [[Int]]
work = foldM step [] [1 .. 400 :: Int]
  where
    step acc i = do
        _ <- evaluate ({-# SCC "pf_heavy" #-} heavy (300000 + i))
        _ <- evaluate ({-# SCC "pf_light" #-} light (100000 + i))
        xs <- evaluate ({-# SCC "pf_keep" #-} keep (2000 + i))
        return (xs : acc)
{-# NOINLINE work #-}

heavy :: Int -> Int
heavy n = sum (map (`mod` 7) [1 .. n])

light :: Int -> Int
light n = sum (map (`mod` 5) [1 .. n])

keep :: Int -> [Int]
keep n = let xs = [1 .. n] in sum xs `seq` xs
{-# NOINLINE heavy #-}
{-# NOINLINE light #-}
{-# NOINLINE keep #-}
