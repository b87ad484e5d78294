-- haskell-control: a Haskell program that flushes, stops, restarts and
-- watches its own live eventlog through the eventlog-sink package
-- (haskell/eventlog-sink, module GHC.Eventlog.Sink).  docs/HASKELL.md
-- shows how to build and run it; tests/rts/test_haskell_package.sh
-- runs it.
--
-- Usage: haskell-control [--restart-on SPEC2] [N] +RTS --eventlog-sink=SPEC
--
-- With --restart-on the second stream goes to SPEC2 instead of SPEC: the
-- program chooses it in Haskell between the stop and the start
-- (configure); a spec the library refuses ends the program there with
-- the library's one-line reason.
--
-- It works in two rounds, one per stream.  In round R (1, 2) two threads
-- post N user events each ("haskell-control R T I", T = a or b, I = 1..N;
-- N = 100 by default), the main thread posts the marker
-- "haskell-control flushed R", flushes, prints "flushed R" and waits for
-- a line on stdin: the consumer's acknowledgement that it has the marker,
-- which only the flush can have delivered (the events fill a small part
-- of one buffer, and the program is still running).  After round 1 it
-- prints the sink's counters ("stats 1: ..."), stops the eventlog, shows
-- that no counters exist while it is stopped, starts it again (a second
-- start must say ELS_EBUSY) and prints "started"; consumers then get a
-- second stream, header first.  After round 2 it prints "stats 2: ...",
-- then uses the runtime control: prints the event classes ("classes
-- sgpu"), turns full sparks on ("classes sgpfu"), puts a snapshot into
-- the stream, sets each capability's buffer to 1 MiB ("buffer 1048576"),
-- and exits, which ends the second stream.
--
-- A stats line reads
--   stats R: units accepted A sent S queued Q dropped D;
--   bytes accepted A sent S queued Q dropped D; drops CAUSE N ...;
--   reasons start N buffer-full N flush N stop N; consumers C
-- (one line), with the drop causes named by the library.
--
-- Exit status 0; 1 if a call fails unexpectedly (the line says which);
-- 2 on a usage error.  Not its job: choosing the sink (the RTS flag does)
-- or checking what the consumer received (the test does).
module Main (main) where

import Control.Concurrent (forkIO)
import Control.Concurrent.MVar
import Control.Monad (forM_)
import Data.List (intercalate)
import Debug.Trace (traceEventIO, traceMarkerIO)
import qualified GHC.Eventlog.Sink as Sink
import System.Environment (getArgs)
import System.Exit (ExitCode (..), exitWith)
import System.IO

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  args <- getArgs
  (next, rest) <- case args of
    "--restart-on" : spec : more -> pure (Just spec, more)
    _ -> pure (Nothing, args)
  n <- case rest of
    [] -> pure 100
    [s] | [(k, "")] <- reads s, k > 0 -> pure (k :: Int)
    _ -> do
      hPutStrLn stderr
        "usage: haskell-control [--restart-on SPEC2] [N] +RTS --eventlog-sink=SPEC"
      exitWith (ExitFailure 2)

  roundTrip n 1
  printStats 1
  Sink.stop
  Sink.stats >>= \r -> case r of
    Left e -> putStrLn ("stats while stopped: " ++ show (Sink.errorCode e))
    Right _ -> die "stats while stopped returned counters"
  mapM_ (\spec -> Sink.configure spec >>= either (die . show) pure) next
  Sink.start >>= either (die . show) pure
  Sink.start >>= \r -> case r of
    Left e -> putStrLn ("second start: " ++ show (Sink.errorCode e))
    Right () -> die "a second start succeeded"
  putStrLn "started"
  roundTrip n 2
  printStats 2
  printClasses
  Sink.changeClasses "+f" >>= either (die . show) pure
  printClasses
  Sink.snapshot >>= either (die . show) pure
  Sink.setBufferSize (1024 * 1024) >>= either (die . show) pure
  Sink.bufferSize >>= either (die . show) (\b -> putStrLn ("buffer " ++ show b))

printClasses :: IO ()
printClasses =
  Sink.getClasses >>= either (die . show) (putStrLn . ("classes " ++) . map Sink.classLetter)

-- Post round r's events from two threads and the marker, flush, and wait
-- for the acknowledgement.
roundTrip :: Int -> Int -> IO ()
roundTrip n r = do
  dones <- mapM worker ["a", "b"]
  mapM_ takeMVar dones
  traceMarkerIO ("haskell-control flushed " ++ show r)
  Sink.flush
  putStrLn ("flushed " ++ show r)
  _ <- getLine
  pure ()
  where
    worker t = do
      done <- newEmptyMVar
      _ <- forkIO $ do
        forM_ [1 .. n] $ \i ->
          traceEventIO ("haskell-control " ++ show r ++ " " ++ t ++ " " ++ show i)
        putMVar done ()
      pure done

printStats :: Int -> IO ()
printStats r = Sink.stats >>= either (die . show) (putStrLn . line)
  where
    line s =
      "stats " ++ show r ++ ": units " ++ four Sink.units s ++ "; bytes "
        ++ four Sink.bytes s ++ "; drops "
        ++ unwords [name ++ " " ++ show (Sink.units c) | (name, c) <- Sink.dropped s]
        ++ "; reasons " ++ reasons (Sink.byReason s)
        ++ "; consumers " ++ show (Sink.consumersConnected s)
    four f s =
      intercalate " "
        [ "accepted " ++ show (f (Sink.accepted s))
        , "sent " ++ show (f (Sink.sent s))
        , "queued " ++ show (f (Sink.queued s))
        , "dropped " ++ show (f (Sink.totalDropped s))
        ]
    reasons c =
      unwords
        [ "start", show (Sink.reasonStart c)
        , "buffer-full", show (Sink.reasonBufferFull c)
        , "flush", show (Sink.reasonFlush c)
        , "stop", show (Sink.reasonStop c)
        ]

die :: String -> IO a
die msg = do
  hPutStrLn stderr ("haskell-control: " ++ msg)
  exitWith (ExitFailure 1)
