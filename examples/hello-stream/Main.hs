-- hello-stream: a deterministic, event-heavy program for eventlog-sink.
--
-- Usage: hello-stream [N [PAUSE_US]]
--
-- It emits exactly N user events ("hello-stream 1" .. "hello-stream N",
-- N from argv, default 100000) with traceEventIO, plus a few markers, while
-- two worker threads hand chunks of the work to each other through MVars,
-- spark pure work with par/pseq and allocate enough to trigger many GCs, so
-- that a run with +RTS -l -N2 produces scheduler, GC, spark and user events
-- on both capabilities.  The end-to-end tests count the user events a
-- consumer received against N; this program is not responsible for how the
-- events travel (that is the C main in main.c and the library).  Only base
-- is used: par/pseq come from GHC.Conc, not from the parallel package.
-- PAUSE_US (default 0) makes each worker sleep that many microseconds after
-- each chunk of 1000 events: a long-running program with a small eventlog,
-- for tests that join a running program.
module Main (main) where

import Control.Concurrent (forkIO, threadDelay)
import Control.Concurrent.MVar
import Control.Exception (evaluate)
import Control.Monad (forM_, replicateM_)
import Data.List (foldl')
import Debug.Trace (traceEventIO, traceMarkerIO)
import GHC.Conc (par, pseq)
import System.Environment (getArgs)
import System.Exit (exitWith, ExitCode (..))
import System.IO

-- Events per chunk: one MVar handoff between the workers per chunk.
chunkSize :: Int
chunkSize = 1000

main :: IO ()
main = do
    args <- getArgs
    let nat a = case reads a of
            [(v, "")] | v >= 0 -> Just v
            _ -> Nothing
    (n, pause) <- case map nat args of
        [] -> return (100000, 0)
        [Just v] -> return (v, 0)
        [Just v, Just p] -> return (v, p)
        _ -> do
            hPutStrLn stderr "usage: hello-stream [N [PAUSE_US]]   (N user events, default 100000)"
            exitWith (ExitFailure 2)
    traceMarkerIO "hello-stream: start"

    let chunks = [ (lo, min n (lo + chunkSize - 1)) | lo <- [1, 1 + chunkSize .. n] ]
    inboxA <- newEmptyMVar
    inboxB <- newEmptyMVar
    done <- newEmptyMVar
    results <- newMVar (0 :: Int)
    -- The two workers pass the rest of the chunk list back and forth, so
    -- every chunk is handled exactly once, by whichever worker holds the
    -- list; the scheduler decides on which capability each one runs.
    _ <- forkIO (worker n pause inboxA inboxB results done)
    _ <- forkIO (worker n pause inboxB inboxA results done)
    -- A third thread only allocates and sparks, so that GCs and spark
    -- events happen while the workers emit user events.
    _ <- forkIO (churn (max 1 (n `div` 20000)) >> putMVar done ())
    putMVar inboxA (Just chunks)
    replicateM_ 3 (takeMVar done)

    total <- readMVar results
    traceMarkerIO "hello-stream: end"
    -- Every chunk contributes a value > 0; a lost chunk would show here.
    if total <= 0 && n > 0
        then hPutStrLn stderr "hello-stream: internal error: no chunk ran" >> exitWith (ExitFailure 1)
        else return ()
    putStrLn ("emitted " ++ show n ++ " user events")
    hFlush stdout

-- | Take the remaining chunks from the inbox, emit the first chunk's
-- events, pass the rest on.  Nothing means "the other worker finished".
worker :: Int -> Int -> MVar (Maybe [(Int, Int)]) -> MVar (Maybe [(Int, Int)])
       -> MVar Int -> MVar () -> IO ()
worker n pause inbox outbox results done = loop
  where
    loop = do
        msg <- takeMVar inbox
        case msg of
            Nothing -> putMVar done ()
            Just [] -> putMVar outbox Nothing >> putMVar done ()
            Just ((lo, hi) : rest) -> do
                forM_ [lo .. hi] $ \i ->
                    traceEventIO ("hello-stream " ++ show i)
                v <- evaluate (sparkedWork lo hi)
                modifyMVar_ results (\t -> evaluate (t + v))
                if hi >= n `div` 2 && lo <= n `div` 2
                    then traceMarkerIO "hello-stream: half"
                    else return ()
                if pause > 0 then threadDelay pause else return ()
                putMVar outbox (Just rest)
                loop

-- | Pure work split in two with a spark; always > 0.
sparkedWork :: Int -> Int -> Int
sparkedWork lo hi =
    let mid = (lo + hi) `div` 2
        a = foldl' (+) 0 [ x * x `mod` 7919 | x <- [lo .. mid] ]
        b = foldl' (+) 0 [ x * 3 `mod` 7907 | x <- [mid + 1 .. hi] ]
    in a `par` (b `pseq` (a + b + 1))

-- | Allocate short-lived lists and spark a small tree of sums, k rounds.
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
