-- Prof.hs: a profiled program for tests/rts/test_profiling.sh that switches
-- the RTS profilers on command, through GHC.Eventlog.Sink.Profiling.  A
-- worker thread allocates and keeps data alive under the cost centres
-- "prof_work" and "prof_retain", so that time samples and heap samples by
-- cost centre name them.  It reads one command per line on stdin and
-- answers one line on stdout, so that the test can synchronise on what
-- the program did:
--   heap on|off   Prof.heapProfiling        -> "heap ok" or "heap ERROR"
--   census        Prof.heapCensus           -> "census ok" or ...
--   time on|off   Prof.timeProfiling        -> "time ok" or ...
--   mark TEXT     traceEventIO TEXT, then flushEventLog(NULL) -> "marked"
--   quit          return from main          -> "bye"
-- It says "ready" once the worker runs.
module Main (main) where

import Control.Concurrent (forkIO)
import Control.Concurrent.MVar
import Control.Exception (evaluate)
import Control.Monad (unless, when)
import Data.IORef
import Debug.Trace (traceEventIO)
import Foreign.Ptr (Ptr, nullPtr)
import System.IO

import qualified GHC.Eventlog.Sink as Sink
import qualified GHC.Eventlog.Sink.Profiling as Prof

-- rts/EventLogControl.h: void flushEventLog(Capability **cap); NULL from
-- a safe foreign call, which holds no capability.
foreign import ccall safe "flushEventLog" flushEventLog :: Ptr () -> IO ()

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    kept <- newIORef []
    started <- newEmptyMVar
    _ <- forkIO (worker kept started)
    takeMVar started
    putStrLn "ready"
    loop
  where
    loop = do
        eof <- isEOF
        unless eof $ do
            line <- getLine
            continue <- command (words line) line
            if continue then loop else putStrLn "bye"
    command ["heap", onOff] _ = answer "heap" (Prof.heapProfiling (onOff == "on"))
    command ["census"] _ = answer "census" Prof.heapCensus
    command ["time", onOff] _ = answer "time" (Prof.timeProfiling (onOff == "on"))
    command ("mark" : _) line = do
        traceEventIO (drop 5 line)
        flushEventLog nullPtr
        putStrLn "marked"
        return True
    command ["quit"] _ = return False
    command _ line = hPutStrLn stderr ("prof: unknown command: " ++ line) >> return True
    answer name act = do
        r <- act
        putStrLn (name ++ " " ++ either (Sink.errorCodeName . Sink.errorCode) (const "ok") r)
        return True

-- Runs until the program ends: computes (time samples name prof_work)
-- and now and then replaces a small list it keeps alive (heap samples
-- name prof_retain).  Little is allocated and little is live, so the
-- program spends its time in the mutator: the heap profile interval
-- counts mutator time only.
worker :: IORef [Int] -> MVar () -> IO ()
worker kept started = do
    putMVar started ()
    let loop :: Int -> IO ()
        loop i = do
            when (i `mod` 64 == 0) $
                writeIORef kept =<< evaluate ({-# SCC "prof_retain" #-} retain (2000 + i `mod` 7))
            _ <- evaluate ({-# SCC "prof_work" #-} work (100000 + i `mod` 5))
            loop (i + 1)
    loop 0

retain :: Int -> [Int]
retain n = let xs = [1 .. n] in sum xs `seq` xs

work :: Int -> Int
work n = sum (map (`mod` 7) [1 .. n])
{-# NOINLINE retain #-}
{-# NOINLINE work #-}
