-- Controlled.hs: a test program whose run ends when the test says so.
--
-- The shell tests act on a running program (a consumer joins late, is
-- killed, reconnects many times; the test looks at what has arrived) and
-- must not bet on how long the program runs.  This program never ends on
-- its own: it runs until a line, or end-of-file, arrives on its standard
-- input (tests/harness.sh: start_controlled / stop_controlled), and it says on
-- standard output when it has reached the point the test waits for.  It is
-- not responsible for where its eventlog goes (the RTS flag, or
-- EVENTLOG_SINK with the C main of examples/hello-stream, decides that).
--
-- Usage:
--   controlled run READY   two threads emit user events "controlled I"
--                          (I = 1, 2, ..., each number once) in chunks of
--                          50 with a 1 ms pause after each chunk; once at
--                          least READY events were emitted it prints
--                          "ready"; at the end "emitted K user events".
--   controlled idle        one user event "idle-marker", posted on
--                          capability 0, then prints "posted" and does
--                          nothing; for each line "flood" on stdin a thread
--                          on capability 1 emits 150,000 user events
--                          ("controlled flood I", over 5 MB: whole 2 MiB
--                          buffers of that capability fill and are
--                          written) and it prints "flooded"; any other
--                          line or end-of-file ends it, with "idle done".
--                          Needs +RTS -N2.
-- Usage errors exit 2.  Only base is used.
module Main (main) where

import Control.Concurrent (forkIO, forkOn, threadDelay)
import Control.Concurrent.MVar
import Control.Exception (IOException, try)
import Control.Monad (forM, forM_, unless, when)
import Data.IORef
import Debug.Trace (traceEventIO)
import System.Environment (getArgs)
import System.Exit (ExitCode (..), exitWith)
import System.IO

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    args <- getArgs
    case args of
        ["run", r] | [(v, "")] <- reads r, v >= (0 :: Int) -> run v
        ["idle"] -> idle
        _ -> do
            hPutStrLn stderr "usage: controlled run READY | idle"
            exitWith (ExitFailure 2)

-- | Block until the test says stop: a line or end-of-file on stdin.
waitForStop :: IO ()
waitForStop = do
    r <- try getLine :: IO (Either IOException String)
    either (const (return ())) (const (return ())) r

run :: Int -> IO ()
run ready = do
    counter <- newIORef (0 :: Int)
    stopping <- newIORef False
    said <- newEmptyMVar
    dones <- forM [1 :: Int, 2] $ \_ -> do
        done <- newEmptyMVar
        _ <- forkIO (emit counter stopping said >> putMVar done ())
        return done
    -- "ready" once READY events were emitted (at once when READY is 0).
    _ <- forkIO $ do
        when (ready == 0) (tryPutMVar said () >> return ())
        takeMVar said
        putStrLn "ready"
    waitForStop
    atomicWriteIORef stopping True
    mapM_ takeMVar dones
    k <- readIORef counter
    putStrLn ("emitted " ++ show k ++ " user events")
  where
    emit counter stopping said = do
        stop <- readIORef stopping
        unless stop $ do
            base <- atomicModifyIORef' counter (\c -> (c + 50, c))
            forM_ [base + 1 .. base + 50] $ \i ->
                traceEventIO ("controlled " ++ show i)
            when (base + 50 >= ready) (tryPutMVar said () >> return ())
            threadDelay 1000
            emit counter stopping said

idle :: IO ()
idle = do
    onCap 0 (traceEventIO "idle-marker")
    putStrLn "posted"
    let loop = do
            r <- try getLine :: IO (Either IOException String)
            case r of
                Right "flood" -> do
                    onCap 1 (forM_ [1 .. 150000 :: Int] $ \i ->
                        traceEventIO ("controlled flood " ++ show i))
                    putStrLn "flooded"
                    loop
                _ -> return ()
    loop
    putStrLn "idle done"
  where
    -- Run act in a thread bound to capability n and wait for it.
    onCap n act = do
        done <- newEmptyMVar
        _ <- forkOn n (act >> putMVar done ())
        takeMVar done
