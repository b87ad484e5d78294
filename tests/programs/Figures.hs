-- Figures.hs: a program for tests/monitor/test_figures.sh whose run gives
-- every figure the live monitor shows something to count: collections of
-- both generations (allocation and performMajorGC), allocation on every
-- capability, heap censuses with several bands (+RTS -hT, or -hc when
-- built with -prof -fprof-auto), time samples of its own cost centres
-- (among them the lambda in producer's go, which GHC names
-- "producer.go.\"), user messages and markers, and thread stops of many
-- kinds: heap overflow, stack overflow (a deep recursion), yielding,
-- finished, a safe foreign call, blocked on an MVar, on an MVar read, in
-- STM, on a black hole (two threads want one long thunk) and in throwTo
-- (its target masks exceptions uninterruptibly).  At its end, with the
-- producers' lists still kept, it stops the periodic heap censuses and
-- asks for one more (els_ghc_heap_profiling(0), els_ghc_heap_census():
-- the library on the patched RTS), so that the last census is taken
-- while they are kept, whenever the periodic ones came.  It runs on its
-- own for a second or two and prints "census R S" (R, S: the calls'
-- results) and "done N" (N: a checksum, so that nothing is optimised
-- away).  Only base and stm are used.
module Main (main) where

import Control.Concurrent
import Control.Concurrent.STM
import Control.Exception
import Control.Monad
import Data.IORef
import Data.List (foldl')
import Debug.Trace (traceEventIO, traceMarkerIO)
import Foreign.C.Types (CInt (..), CUInt (..))
import System.Environment (getArgs)
import System.IO
import System.Mem (performMajorGC)

foreign import ccall safe "unistd.h usleep" c_usleep :: CUInt -> IO CInt

-- include/eventlog-sink/ghc.h: the periodic heap censuses on or off; one
-- heap census at the next major GC.
foreign import ccall safe "els_ghc_heap_profiling" elsHeapProfiling :: CInt -> IO CInt
foreign import ccall safe "els_ghc_heap_census" elsHeapCensus :: IO CInt

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    args <- getArgs
    let rounds = case args of
            [r] | [(v, "")] <- reads r -> v
            _ -> 6 :: Int
    traceMarkerIO "figures start"
    kept <- newIORef []
    box <- newEmptyMVar
    -- Two producers allocate lists under the lambda of producer's go and
    -- hand them to a consumer through an MVar (it blocks when empty).
    pdone <- forM [1, 2] $ \p -> do
        d <- newEmptyMVar
        _ <- forkIO (producer box p rounds >> putMVar d ())
        return d
    cdone <- newEmptyMVar
    _ <- forkIO (consumer box kept (2 * rounds) >>= putMVar cdone)
    -- A reader of an MVar that is filled only at the end.
    gate <- newEmptyMVar
    rdone <- newEmptyMVar
    _ <- forkIO (readMVar gate >>= putMVar rdone)
    -- An STM waiter released at the end.
    flag <- newTVarIO False
    sdone <- newEmptyMVar
    _ <- forkIO (atomically (readTVar flag >>= check) >> putMVar sdone ())
    -- throwTo that must wait: its target masks exceptions uninterruptibly
    -- while it waits for the gate.
    tgate <- newEmptyMVar
    tstarted <- newEmptyMVar
    tdone <- newEmptyMVar
    target <- forkIO $ handle (\e -> putMVar tdone (e :: AsyncException)) $ do
        uninterruptibleMask_ (putMVar tstarted () >> takeMVar tgate)
        threadDelay 10000000
        putMVar tdone ThreadKilled
    takeMVar tstarted
    thrown <- newEmptyMVar
    _ <- forkIO (throwTo target UserInterrupt >> putMVar thrown ())
    -- A deep recursion grows its stack chunk by chunk.
    ddone <- newEmptyMVar
    _ <- forkIO (evaluate (deep 100000) >>= putMVar ddone)
    -- Black holes: threads force one long shared thunk at once.
    n <- evaluate (length args + 30000000)
    let shared = spin n
    bdone <- forM [1 .. 3 :: Int] $ \_ -> do
        d <- newEmptyMVar
        _ <- forkIO (evaluate shared >>= putMVar d)
        return d
    -- Safe foreign calls.
    forM_ [1 .. 5 :: Int] $ \i -> do
        _ <- c_usleep 2000
        traceEventIO ("figures call " ++ show i)
    mapM_ takeMVar pdone
    total <- takeMVar cdone
    performMajorGC
    traceMarkerIO "figures gates"
    putMVar tgate ()
    takeMVar thrown
    _ <- takeMVar tdone
    putMVar gate rounds
    r <- takeMVar rdone
    atomically (writeTVar flag True)
    takeMVar sdone
    d <- takeMVar ddone
    bs <- mapM takeMVar bdone
    stopped <- elsHeapProfiling 0
    performMajorGC              -- a census already due is taken here
    census <- elsHeapCensus
    performMajorGC
    xs <- readIORef kept
    traceMarkerIO "figures end"
    putStrLn ("census " ++ show stopped ++ " " ++ show census)
    putStrLn ("done " ++ show (total + r + d + sum bs + sum (map length xs)))

-- | Rounds of lists, each element made by the lambda (the cost centre
-- "producer.go.\" under -fprof-auto), kept alive for a while.
producer :: MVar [Int] -> Int -> Int -> IO ()
producer box p rounds = go 0
  where
    go i
        | i >= rounds = return ()
        | otherwise = do
            xs <- evaluate (map (\x -> x * (i + p) + 1) [1 .. 20000])
            _ <- evaluate (foldl' (+) 0 xs)
            traceEventIO ("figures round " ++ show p ++ " " ++ show i)
            putMVar box xs
            when (i `mod` 2 == 1) yield
            go (i + 1)

consumer :: MVar [Int] -> IORef [[Int]] -> Int -> IO Int
consumer box kept count = loop 0 0
  where
    loop k acc
        | k >= count = return acc
        | otherwise = do
            xs <- takeMVar box
            modifyIORef' kept (take 4 . (xs :))
            when (k `mod` 4 == 3) performMajorGC
            loop (k + 1) (acc + length xs)

-- | Not tail recursive: its stack grows with n.
deep :: Int -> Int
deep 0 = 0
deep k = k `mod` 7 + deep (k - 1)
{-# NOINLINE deep #-}

spin :: Int -> Int
spin k = foldl' (\a b -> (a * 31 + b) `mod` 1000003) 0 [1 .. k]
{-# NOINLINE spin #-}
