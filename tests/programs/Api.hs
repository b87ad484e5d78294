-- Api.hs: a program for tests/rts/test_ghc_api.sh that drives the library's
-- GHC entry points on command.  It reads one command per line on stdin
-- and answers one line on stdout, so that the test can synchronise on
-- what the program did:
--   stop         els_ghc_stop()                       -> "stopped"
--   start        els_ghc_start()                      -> "start RC"
--   emit TEXT    traceEventIO TEXT                    -> "emitted"
--   flush        flushEventLog(NULL), a safe call     -> "flushed"
--   stats        els_ghc_stats_sized()                -> "stats RC"
--   quit         return from main                     -> "bye"
-- It says "ready" first.
module Main (main) where

import Control.Monad (unless)
import Debug.Trace (traceEventIO)
import Foreign.C.Types (CInt (..), CSize (..))
import Foreign.Marshal.Alloc (allocaBytes)
import Foreign.Ptr (Ptr, nullPtr)
import System.IO

foreign import ccall safe "els_ghc_stop" elsStop :: IO ()
foreign import ccall safe "els_ghc_start" elsStart :: IO CInt
foreign import ccall safe "els_ghc_stats_sized" elsStats :: Ptr () -> CSize -> IO CInt
-- rts/EventLogControl.h: void flushEventLog(Capability **cap); NULL from
-- a safe foreign call, which holds no capability.
foreign import ccall safe "flushEventLog" flushEventLog :: Ptr () -> IO ()

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    putStrLn "ready"
    loop
  where
    loop = do
        eof <- isEOF
        unless eof $ do
            line <- getLine
            continue <- command (words line) line
            if continue then loop else putStrLn "bye"
    command ["stop"] _ = elsStop >> putStrLn "stopped" >> return True
    command ["start"] _ = do
        rc <- elsStart
        putStrLn ("start " ++ show rc)
        return True
    command ("emit" : _) line = do
        traceEventIO (drop 5 line)
        putStrLn "emitted"
        return True
    command ["flush"] _ = flushEventLog nullPtr >> putStrLn "flushed" >> return True
    command ["stats"] _ = do
        -- struct els_stats is a few hundred bytes; 4096 is room enough,
        -- and the library writes no more than the size it is given.
        rc <- allocaBytes 4096 (\p -> elsStats p 4096)
        putStrLn ("stats " ++ show rc)
        return True
    command ["quit"] _ = return False
    command _ line = hPutStrLn stderr ("api: unknown command: " ++ line) >> return True
