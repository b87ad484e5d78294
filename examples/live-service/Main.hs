-- live-service: a Haskell program that streams its eventlog through the
-- patched GHC 9.0.2 RTS, with no C main and no code of its own for it.
--
-- README.  Built with the patched RTS's compiler driver (rts-patches/):
--
--     ghc-eventlog-sink -threaded -eventlog -rtsopts Main.hs -o live-service \
--         -leventlog-sink
--
-- the program chooses where its eventlog goes on the command line, like
-- any +RTS option, for example
--
--     eventlog-sink recv --retry 15 unix:/tmp/app.sock -o app.eventlog &
--     live-service burst 200000 +RTS -N2 \
--         --eventlog-sink='unix:/tmp/app.sock?wait=10&policy=block'
--
-- (--eventlog-sink implies -l; add --eventlog-flush-interval=SECS to have
-- a quiet program's events delivered within SECS rather than when a 2 MiB
-- buffer fills).  The subcommands are the workloads scripts/demo.sh and
-- tests/sinks/test_e2e_rts.sh run:
--
--   burst N      exactly N user events "live-service burst I" (I = 1..N)
--                from four threads, with sparks (par/pseq) and enough
--                allocation for many GCs; prints "emitted N user events".
--   idle SECS    one user event "idle-marker", then nothing for SECS
--                seconds; prints "idle for SECS s".
--   steady SECS  about 10,000 user events a second ("live-service steady
--                I") from two threads for SECS seconds; prints "emitted K
--                user events".
--   restart K N  two worker threads emit user events ("live-service
--                restart W I") all the time while the main thread, K times,
--                waits until the workers have emitted at least N more,
--                stops the eventlog (els_ghc_stop), pauses 50 ms and starts
--                it again (els_ghc_start, which must return 0; otherwise
--                the program says why and exits 1); each start opens the
--                sink anew, so consumers get K+1 complete streams.  Prints
--                "restarted K times".
--
-- Usage errors exit 2.  Only base is used (par/pseq from GHC.Conc).  This
-- program is not responsible for how the events travel: the RTS flag picks
-- the sink and libeventlog-sink delivers it.
{-# LANGUAGE ForeignFunctionInterface #-}
module Main (main) where

import Control.Concurrent (forkIO, threadDelay, yield)
import Control.Concurrent.MVar
import Control.Exception (evaluate)
import Control.Monad (forM, forM_, unless, when)
import Data.IORef
import Data.List (foldl')
import Debug.Trace (traceEventIO, traceMarkerIO)
import Foreign.C.Types (CInt (..))
import GHC.Clock (getMonotonicTime)
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import System.Exit (ExitCode (..), exitWith)
import System.IO

-- Safe calls: both stop every capability inside the RTS, which an unsafe
-- call (one that keeps holding its capability) would deadlock.
foreign import ccall safe "els_ghc_stop" elsStop :: IO ()
foreign import ccall safe "els_ghc_start" elsStart :: IO CInt

main :: IO ()
main = do
    args <- getArgs
    case args of
        ["burst", n] | Just v <- nat n -> burst v
        ["idle", s] | Just v <- secs s -> idle v
        ["steady", s] | Just v <- secs s -> steady v
        ["restart", k, n] | Just kv <- nat k, Just nv <- nat n -> restart kv nv
        _ -> usage

usage :: IO ()
usage = do
    hPutStrLn stderr "usage: live-service burst N | idle SECS | steady SECS | restart K N"
    exitWith (ExitFailure 2)

nat :: String -> Maybe Int
nat a = case reads a of
    [(v, "")] | v >= 0 -> Just v
    _ -> Nothing

secs :: String -> Maybe Double
secs a = case reads a of
    [(v, "")] | v >= 0 -> Just v
    _ -> case nat a of
        Just v -> Just (fromIntegral v)
        Nothing -> Nothing

say :: String -> IO ()
say s = putStrLn s >> hFlush stdout

-- ---------------------------------------------------------------------------
-- burst N
-- ---------------------------------------------------------------------------

-- | Events per chunk: each chunk is followed by a piece of sparked work.
chunkSize :: Int
chunkSize = 1000

burst :: Int -> IO ()
burst n = do
    traceMarkerIO "live-service: burst start"
    -- Four contiguous ranges covering 1..n exactly once, one per thread;
    -- the scheduler spreads the threads over the capabilities.
    let threads = 4
        bounds t = (t * n `div` threads + 1, (t + 1) * n `div` threads)
    dones <- forM [0 .. threads - 1] $ \t -> do
        done <- newEmptyMVar
        _ <- forkIO (emitRange (bounds t) >>= putMVar done)
        return done
    -- One more thread only allocates and sparks, so that GCs and spark
    -- events happen while the others emit.
    churnDone <- newEmptyMVar
    _ <- forkIO (churn (max 1 (n `div` 20000)) >> putMVar churnDone ())
    sums <- mapM takeMVar dones
    takeMVar churnDone
    traceMarkerIO "live-service: burst end"
    -- Every non-empty chunk contributes a value > 0; a lost one shows here.
    when (n > 0 && sum sums <= 0) $ do
        hPutStrLn stderr "live-service: internal error: no chunk ran"
        exitWith (ExitFailure 1)
    say ("emitted " ++ show n ++ " user events")

emitRange :: (Int, Int) -> IO Int
emitRange (lo0, hi0) = go lo0 0
  where
    go lo acc
        | lo > hi0 = return acc
        | otherwise = do
            let hi = min hi0 (lo + chunkSize - 1)
            forM_ [lo .. hi] $ \i -> traceEventIO ("live-service burst " ++ show i)
            v <- evaluate (sparkedWork lo hi)
            go (hi + 1) (acc + v)

-- | Pure work split in two with a spark; always > 0.
sparkedWork :: Int -> Int -> Int
sparkedWork lo hi =
    let mid = (lo + hi) `div` 2
        a = foldl' (+) 0 [ x * x `mod` 7919 | x <- [lo .. mid] ]
        b = foldl' (+) 0 [ x * 3 `mod` 7907 | x <- [mid + 1 .. hi] ]
    in a `par` (b `pseq` (a + b + 1))

-- | Allocate short-lived data and spark a small tree of sums, k rounds.
churn :: Int -> IO ()
churn k = forM_ [1 .. k] $ \r -> do
    _ <- evaluate (tree 10 r)
    _ <- evaluate (length (show (foldl' (+) 0 (map fromIntegral [1 .. 20000 + r] :: [Integer]))))
    return ()
  where
    tree :: Int -> Int -> Int
    tree 0 s = s `mod` 13
    tree d s = let l = tree (d - 1) (s * 2)
                   rr = tree (d - 1) (s * 2 + 1)
               in l `par` (rr `pseq` (l + rr))

-- ---------------------------------------------------------------------------
-- idle SECS
-- ---------------------------------------------------------------------------

-- | One event, then a quiet program: without a flush interval the event
-- stays in its capability's buffer until exit.
idle :: Double -> IO ()
idle s = do
    traceEventIO "idle-marker"
    threadDelay (round (s * 1e6))
    say ("idle for " ++ show s ++ " s")

-- ---------------------------------------------------------------------------
-- steady SECS
-- ---------------------------------------------------------------------------

-- | Two threads, each 50 events every 10 ms (about 10,000 a second in
-- all), until SECS seconds have passed.
steady :: Double -> IO ()
steady s = do
    t0 <- getMonotonicTime
    counter <- newIORef (0 :: Int)
    dones <- forM [1 :: Int, 2] $ \_ -> do
        done <- newEmptyMVar
        _ <- forkIO (loop t0 counter >> putMVar done ())
        return done
    mapM_ takeMVar dones
    k <- readIORef counter
    say ("emitted " ++ show k ++ " user events")
  where
    loop t0 counter = do
        now <- getMonotonicTime
        unless (now - t0 >= s) $ do
            base <- atomicModifyIORef' counter (\c -> (c + 50, c))
            forM_ [base + 1 .. base + 50] $ \i ->
                traceEventIO ("live-service steady " ++ show i)
            _ <- evaluate (sparkedWork base (base + 200))
            threadDelay 10000
            loop t0 counter

-- ---------------------------------------------------------------------------
-- restart K N
-- ---------------------------------------------------------------------------

restart :: Int -> Int -> IO ()
restart k n = do
    emitted <- newIORef (0 :: Int)
    stopping <- newIORef False
    dones <- forM [1 :: Int, 2] $ \w -> do
        done <- newEmptyMVar
        _ <- forkIO (worker w emitted stopping 1 >> putMVar done ())
        return done
    forM_ [1 .. k] $ \r -> do
        waitFor emitted n
        elsStop
        threadDelay 50000
        rc <- elsStart
        when (rc /= 0) $ do
            hPutStrLn stderr ("live-service: els_ghc_start returned " ++ show rc
                              ++ " at restart " ++ show r ++ " (expected 0)")
            exitWith (ExitFailure 1)
        traceMarkerIO ("live-service: restart " ++ show r)
    waitFor emitted n
    atomicWriteIORef stopping True
    mapM_ takeMVar dones
    say ("restarted " ++ show k ++ " times")
  where
    -- Wait until the workers have emitted at least m more events.
    waitFor ref m = do
        start <- readIORef ref
        let go = do
                now <- readIORef ref
                unless (now - start >= m) (threadDelay 1000 >> go)
        go
    -- Chunks of 100 events, then a bit of sparked, allocating work.
    worker :: Int -> IORef Int -> IORef Bool -> Int -> IO ()
    worker w emitted stopping i = do
        stop <- readIORef stopping
        unless stop $ do
            forM_ [i .. i + 99] $ \j ->
                traceEventIO ("live-service restart " ++ show w ++ " " ++ show j)
            atomicModifyIORef' emitted (\c -> (c + 100, ()))
            _ <- evaluate (sparkedWork i (i + 500))
            yield
            worker w emitted stopping (i + 100)
