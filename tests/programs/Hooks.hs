-- Hooks.hs: a program for tests/rts/test_snapshot_hooks.sh, a library's
-- id-to-name table in every stream.  At start it posts the table
-- ("name ID NAME" user events) and, unless told "noregister", registers
-- the same posting with GHC.Eventlog.Sink.onSnapshot (after a hook that
-- always throws, which must not stop it).  Then it posts events that use
-- the ids ("use ID ..."), in one of three settings:
--
--   late BYTES: BYTES bytes of uses, a flush, "ready" on stdout; then it
--     waits for a line on stdin (a consumer joins meanwhile), waits for
--     the hook's run, uses every id, marks "end";
--   restart FILE: stops the eventlog, moves it to file:FILE, starts it,
--     waits for the hook's run, uses every id;
--   fork FILE: a forkProcess child does the same as restart with its own
--     file:FILE; the parent waits for it.
--
-- Waiting for the hook's run (at most 20 s; not without the hook) is the
-- test's doing, so that the program does not exit before
-- the re-posted table is out.  At the end it prints "hook bound: BOOL"
-- (the hook ran on a bound thread), "reposts: N" and "done".
--
-- Usage: hooks late BYTES | restart FILE | fork FILE  [noregister]
module Main (main) where

import Control.Concurrent (isCurrentThreadBound, threadDelay)
import Control.Exception (throwIO)
import Control.Monad (forM_, unless, when)
import Data.IORef
import Debug.Trace (traceEventIO, traceMarkerIO)
import qualified GHC.Eventlog.Sink as Sink
import System.Environment (getArgs)
import System.Exit (exitFailure)
import System.IO
import System.Posix.Process (forkProcess, getProcessStatus)

table :: [(Int, String)]
table = [(i, n) | (i, n) <- zip [101, 103 ..] names]
  where
    names = ["parser", "lexer", "typecheck", "rename", "desugar", "simplify",
             "codegen", "link", "gc-roots", "scheduler", "io-manager", "timer"]

postTable :: IO ()
postTable = forM_ table $ \(i, n) -> traceEventIO ("name " ++ show i ++ " " ++ n)

useAll :: String -> IO ()
useAll what = forM_ table $ \(i, _) -> traceEventIO ("use " ++ show i ++ " " ++ what)

-- Uses of the ids, about bytes bytes of them.
filler :: Int -> IO ()
filler bytes = forM_ [1 .. bytes `div` 100] $ \k -> do
  let (i, _) = table !! (k `mod` length table)
  traceEventIO ("use " ++ show i ++ " filler " ++ show k ++ " " ++ replicate 60 'x')

fail' :: String -> IO a
fail' msg = hPutStrLn stderr ("hooks: " ++ msg) >> exitFailure

-- Wait until the hook has run more than n times (20 s at most).
waitRepost :: Bool -> IORef Int -> Int -> IO ()
waitRepost False _ _ = pure ()
waitRepost True runs n = go (200 :: Int)
  where
    go 0 = putStrLn "no re-post came"
    go k = do
      m <- readIORef runs
      unless (m > n) $ threadDelay 100000 >> go (k - 1)

restartInto :: String -> IO ()
restartInto file = do
  Sink.stop
  Sink.configure ("file:" ++ file) >>= either (fail' . show) pure
  Sink.start >>= either (fail' . show) pure

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  args <- getArgs
  let register = "noregister" `notElem` args
  runs <- newIORef (0 :: Int)
  bound <- newIORef False
  postTable
  when register $ do
    Sink.onSnapshot (throwIO (userError "a hook that always throws"))
    Sink.onSnapshot $ do
      postTable
      isCurrentThreadBound >>= writeIORef bound
      atomicModifyIORef' runs (\n -> (n + 1, ()))
  case filter (/= "noregister") args of
    ["late", bytes] -> do
      filler (read bytes)
      traceMarkerIO "ready"
      Sink.flush
      n <- readIORef runs
      putStrLn "ready"
      _ <- getLine
      waitRepost register runs n
      useAll "after-join"
      traceMarkerIO "end"
    ["restart", file] -> do
      filler 100000
      n <- readIORef runs
      restartInto file
      waitRepost register runs n
      useAll "after-restart"
    ["fork", file] -> do
      filler 100000
      pid <- forkProcess $ do
        n <- readIORef runs
        restartInto file
        waitRepost register runs n
        useAll "in-child"
        Sink.stop
      st <- getProcessStatus True False pid
      putStrLn ("child exited: " ++ show st)
    _ -> fail' "usage: hooks late BYTES | restart FILE | fork FILE [noregister]"
  readIORef bound >>= \b -> putStrLn ("hook bound: " ++ show b)
  readIORef runs >>= \n -> putStrLn ("reposts: " ++ show n)
  putStrLn "done"
