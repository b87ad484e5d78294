-- App.hs: the Haskell program bench/bench_app.sh measures: an event-heavy
-- parallel workload, a steady source of timestamped user events for the
-- latency measurement, a steady event stream for the memory measurement,
-- and an idle loop for the idle-cost measurement.
--
-- Built by bench_app.sh with the patched RTS's compiler driver and the
-- library, so that one binary runs every configuration (no eventlog,
-- +RTS -l, +RTS --eventlog-sink=SPEC):
--
--     ghc-eventlog-sink -O -threaded -eventlog -rtsopts App.hs -o app \
--         -leventlog-sink
--
-- Subcommands:
--
--   work SCALE        the application-overhead workload (about 3 s at
--                     SCALE 300 on -N2 on a 2.8 GHz Xeon): 8 threads each
--                     running a parallel fold (par/pseq) over freshly
--                     allocated lists with a user event every 4th
--                     iteration, two pairs of threads playing MVar
--                     ping-pong (each pair pinned to one capability), and
--                     many short-lived threads; prints a checksum so
--                     nothing is optimised away.  Everything scales
--                     linearly with SCALE; at 300 the eventlog holds about
--                     3.9 million events (66 MB).
--   latency RATE SECS [busy]
--                     RATE user events a second for SECS seconds, each
--                     "lat NS" where NS is CLOCK_MONOTONIC in nanoseconds
--                     (GHC.Clock.getMonotonicTimeNSec) read just before the
--                     event is posted; on a fixed schedule, so delays do not
--                     accumulate.  With "busy", one more thread computes all
--                     the time, so the RTS never goes idle.
--   steady SECS RATE  about RATE user events a second (two threads, in
--                     batches every 10 ms) plus some allocation, for SECS
--                     seconds.
--   idle SECS         wakes every 100 ms (threadDelay) and does nothing,
--                     for SECS seconds.
--   events N [T]      N user events as fast as possible from T threads
--                     (default 2), thread C pinned to capability C mod 2
--                     (N/T each, "ev C I"), and nothing else: the writer
--                     path's cost with the least program around it (the
--                     peer comparison, -N2; T = 4 for the flush-interval
--                     cost).
--   alloc N           allocation-heavy, one thread: N rounds of building,
--                     reversing and summing a 100,000-element list, a
--                     tenth of each round's list kept alive for the next
--                     (many minor and some major collections).
--   sparks N          parallel with sparks: N rounds of a par/pseq fold
--                     split into 2^8 sparks.
--   threads N         many threads: N rounds of 1,000 threads forked at
--                     once, each doing a little work and signalling an
--                     MVar.
--
-- Usage errors exit 2.  Only base is used.  The program knows nothing of
-- where its eventlog goes: the +RTS options choose that.
module Main (main) where

import Control.Concurrent (forkIO, forkOn, threadDelay)
import Control.Concurrent.MVar
import Control.Exception (evaluate)
import Control.Monad (forM, forM_, unless, when)
import Data.IORef
import Data.List (foldl')
import Debug.Trace (traceEventIO, traceMarkerIO)
import GHC.Clock (getMonotonicTime, getMonotonicTimeNSec)
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import System.Exit (ExitCode (..), exitWith)
import System.IO

main :: IO ()
main = do
    args <- getArgs
    case args of
        ["work", s] | Just v <- nat s -> work v
        ["latency", r, s] | Just rv <- nat r, Just sv <- secs s -> latency rv sv False
        ["latency", r, s, "busy"] | Just rv <- nat r, Just sv <- secs s -> latency rv sv True
        ["steady", s, r] | Just sv <- secs s, Just rv <- nat r -> steady sv rv
        ["idle", s] | Just v <- secs s -> idle v
        ["events", n] | Just v <- nat n -> events v 2
        ["events", n, t] | Just v <- nat n, Just tv <- nat t -> events v tv
        ["alloc", n] | Just v <- nat n -> allocHeavy v
        ["sparks", n] | Just v <- nat n -> sparks v
        ["threads", n] | Just v <- nat n -> manyThreads v
        _ -> do
            hPutStrLn stderr "usage: app work SCALE | latency RATE SECS [busy] | steady SECS RATE | idle SECS | events N [T] | alloc N | sparks N | threads N"
            exitWith (ExitFailure 2)

nat :: String -> Maybe Int
nat a = case reads a of
    [(v, "")] | v > 0 -> Just v
    _ -> Nothing

secs :: String -> Maybe Double
secs a = case reads a of
    [(v, "")] | v > 0 -> Just v
    _ -> fromIntegral <$> nat a

say :: String -> IO ()
say s = putStrLn s >> hFlush stdout

-- ---------------------------------------------------------------------------
-- work SCALE
-- ---------------------------------------------------------------------------

workers :: Int
workers = 8

work :: Int -> IO ()
work scale = do
    traceMarkerIO "app: work start"
    -- Each worker: 60*SCALE iterations of a sparked fold over a fresh list.
    folds <- forM [1 .. workers] $ \w -> spawn (foldWorker w (60 * scale))
    -- Two ping-pong pairs, each pinned to one capability: each round trip
    -- is two blocking MVar hand-offs, that is scheduler events (thread
    -- stop, wakeup, run) on both sides.  Pinned, because a pair split over
    -- two capabilities hands off through OS wake-ups, which makes the run
    -- time bimodal from one run to the next.
    pongs <- forM [0, 1] $ \c -> spawnOn c (pingPong c (1000 * scale))
    -- Short-lived threads: creation, run and finish events, and work.
    swarm <- spawn (threadSwarm (200 * scale))
    rs <- mapM takeMVar (folds ++ pongs ++ [swarm])
    traceMarkerIO "app: work end"
    say ("checksum " ++ show (sum rs `mod` 1000003))

spawn :: IO Int -> IO (MVar Int)
spawn act = do
    v <- newEmptyMVar
    _ <- forkIO (act >>= evaluate >>= putMVar v)
    return v

spawnOn :: Int -> IO Int -> IO (MVar Int)
spawnOn c act = do
    v <- newEmptyMVar
    _ <- forkOn c (act >>= evaluate >>= putMVar v)
    return v

-- | A fold split by par/pseq into 2^depth sparks, over a list allocated
-- anew each iteration; a user event every 4th iteration.
foldWorker :: Int -> Int -> IO Int
foldWorker w iters = go 1 0
  where
    go i acc
        | i > iters = return acc
        | otherwise = do
            when (i `mod` 4 == 0) $
                traceEventIO ("app: worker " ++ show w ++ " iteration " ++ show i)
            v <- evaluate (pfold 3 (w * 100000 + i) 4000)
            go (i + 1) ((acc + v) `mod` 1000003)

pfold :: Int -> Int -> Int -> Int
pfold 0 base n = foldl' (\a x -> (a + x * x) `mod` 7919) 0 (map (+ base) [1 .. n])
pfold d base n =
    let h = n `div` 2
        l = pfold (d - 1) base h
        r = pfold (d - 1) (base + h) (n - h)
    in l `par` (r `pseq` ((l + r) `mod` 7919))

-- | Two threads on capability c bounce a counter through two MVars; a
-- user event every 16 round trips.
pingPong :: Int -> Int -> IO Int
pingPong c rounds = do
    ping <- newEmptyMVar
    pong <- newEmptyMVar
    done <- newEmptyMVar
    _ <- forkOn c $ do
        let loop = do
                v <- takeMVar ping
                putMVar pong (v + 1)
                unless (v >= rounds) loop
        loop
        putMVar done ()
    let go i
            | i > rounds = return i
            | otherwise = do
                putMVar ping i
                v <- takeMVar pong
                when (v `mod` 16 == 0) $
                    traceEventIO ("app: ping-pong " ++ show c ++ " round " ++ show v)
                go v
    r <- go 1
    takeMVar done
    return r

-- | n short-lived threads in batches of 20, each summing a small list.
threadSwarm :: Int -> IO Int
threadSwarm n = go 0 0
  where
    go k acc
        | k >= n = return acc
        | otherwise = do
            vs <- forM [k .. k + 19] $ \j -> spawn (return $! foldl' (+) 0 [j .. j + 2000])
            s <- sum <$> mapM takeMVar vs
            traceEventIO ("app: swarm batch " ++ show k)
            go (k + 20) ((acc + s) `mod` 1000003)

-- ---------------------------------------------------------------------------
-- latency RATE SECS [busy]
-- ---------------------------------------------------------------------------

latency :: Int -> Double -> Bool -> IO ()
latency rate s busy = do
    stop <- newIORef False
    bdone <- newEmptyMVar
    if busy
        then () <$ forkIO (spin stop 0 >>= evaluate >> putMVar bdone ())
        else putMVar bdone ()
    t0 <- getMonotonicTimeNSec
    let period = 1000000000 `div` fromIntegral rate :: Integer
        total = round (s * fromIntegral rate) :: Int
        go i = unless (i >= total) $ do
            let due = fromIntegral t0 + fromIntegral i * period
            now <- getMonotonicTimeNSec
            let wait = (due - fromIntegral now) `div` 1000
            when (wait > 0) $ threadDelay (fromIntegral wait)
            t <- getMonotonicTimeNSec
            traceEventIO ("lat " ++ show t)
            go (i + 1)
    go 0
    atomicWriteIORef stop True
    takeMVar bdone
    say ("emitted " ++ show total ++ " timestamped events")
  where
    spin :: IORef Bool -> Int -> IO Int
    spin stop acc = do
        done <- readIORef stop
        if done
            then return acc
            else do
                v <- evaluate (pfold 0 acc 2000)
                spin stop ((acc + v) `mod` 1000003)

-- ---------------------------------------------------------------------------
-- steady SECS RATE
-- ---------------------------------------------------------------------------

steady :: Double -> Int -> IO ()
steady s rate = do
    t0 <- getMonotonicTime
    counter <- newIORef (0 :: Int)
    let batch = max 1 (rate `div` 200) -- per thread per 10 ms, two threads
    dones <- forM [1 :: Int, 2] $ \w -> spawn (loop t0 counter w batch 0)
    _ <- mapM takeMVar dones
    k <- readIORef counter
    say ("emitted " ++ show k ++ " user events")
  where
    loop t0 counter w batch acc = do
        now <- getMonotonicTime
        if now - t0 >= s
            then return acc
            else do
                base <- atomicModifyIORef' counter (\c -> (c + batch, c))
                forM_ [base + 1 .. base + batch] $ \i ->
                    traceEventIO ("app: steady " ++ show w ++ " " ++ show i)
                v <- evaluate (pfold 1 base 2000)
                threadDelay 10000
                loop t0 counter w batch ((acc + v) `mod` 1000003)

-- ---------------------------------------------------------------------------
-- idle SECS
-- ---------------------------------------------------------------------------

idle :: Double -> IO ()
idle s = do
    t0 <- getMonotonicTime
    let loop = do
            now <- getMonotonicTime
            unless (now - t0 >= s) (threadDelay 100000 >> loop)
    loop
    say ("idle for " ++ show s ++ " s")

-- ---------------------------------------------------------------------------
-- events N
-- ---------------------------------------------------------------------------

events :: Int -> Int -> IO ()
events n t = do
    let per = n `div` t
    dones <- forM [0 .. t - 1] $ \c -> spawnOn (c `mod` 2) (emit c per 0)
    _ <- mapM takeMVar dones
    say ("emitted " ++ show (t * per) ++ " user events")
  where
    emit :: Int -> Int -> Int -> IO Int
    emit c k i
        | i >= k = return i
        | otherwise = traceEventIO ("ev " ++ show c ++ " " ++ show i) >> emit c k (i + 1)

-- ---------------------------------------------------------------------------
-- alloc N, sparks N, threads N: the investigation's three programs
-- ---------------------------------------------------------------------------

allocHeavy :: Int -> IO ()
allocHeavy n = go 0 [] 0
  where
    go :: Int -> [Int] -> Int -> IO ()
    go i kept acc
        | i >= n = say ("checksum " ++ show (acc `mod` 1000003))
        | otherwise = do
            let xs = reverse (map (+ i) [1 .. 100000]) :: [Int]
            v <- evaluate (foldl' (+) 0 xs + length kept)
            go (i + 1) (take 10000 xs) ((acc + v) `mod` 1000003)

sparks :: Int -> IO ()
sparks n = do
    vs <- forM [1 .. n] $ \i -> evaluate (pfold 8 i 200000)
    say ("checksum " ++ show (sum vs `mod` 1000003))

manyThreads :: Int -> IO ()
manyThreads n = do
    vs <- forM [1 .. n] $ \r -> do
        ms <- forM [1 .. 1000 :: Int] $ \t -> spawn (evaluate (pfold 0 (r + t) 200))
        sum <$> mapM takeMVar ms
    say ("checksum " ++ show (sum vs `mod` 1000003))
