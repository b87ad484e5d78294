-- Flood.hs: N user events ("flood C I") as fast as four threads can post
-- them (thread C pinned to capability C mod 2), then exit: a program that
-- leaves its sink a backlog to deliver as it stops
-- (tests/monitor/test_serve_all.sh).  Only base is used.
--
-- Usage: flood N
module Main (main) where

import Control.Concurrent
import Control.Monad
import Debug.Trace (traceEventIO)
import System.Environment (getArgs)

main :: IO ()
main = do
    [n] <- map read <$> getArgs
    done <- forM [0 .. 3 :: Int] $ \c -> do
        v <- newEmptyMVar
        _ <- forkOn c $ do
            forM_ [1 .. n `div` 4 :: Int] $ \i ->
                traceEventIO ("flood " ++ show c ++ " " ++ show i)
            putMVar v ()
        return v
    mapM_ takeMVar done
