-- Fill.hs: a program for tests/rts/test_queue_memory.sh that fills its
-- capabilities' eventlog buffers in a known pattern, on command.  It reads
-- one command per line on stdin and answers one line on stdout:
--   fill N     N rounds, each: a thread on capability 1 posts user events
--              "fill R I" (31 bytes each) worth 1.35 of the capability's
--              buffer, then the eventlog is flushed; so each round writes
--              one full buffer (which the RTS hands over) and one about a
--              third full (which the library copies)      -> "filled N"
--   size B     els_ghc_set_buffer_size(B)                 -> "size RC NOW"
-- and exits on end-of-file or any other line.  It says "ready" first.
-- Run it with +RTS -N2 --eventlog-flush-interval=0, so that nothing but
-- its own flushes writes a partly filled buffer.
module Main (main) where

import Control.Concurrent
import Control.Monad
import Debug.Trace (traceEventIO)
import Foreign.C.Types (CInt (..), CLong (..), CSize (..))
import Foreign.Ptr (Ptr, nullPtr)
import System.IO

foreign import ccall safe "els_ghc_set_buffer_size" elsSetBufferSize :: CSize -> IO CInt
foreign import ccall safe "els_ghc_buffer_size" elsBufferSize :: IO CLong
-- rts/EventLogControl.h: void flushEventLog(Capability **cap); NULL from
-- a safe foreign call, which holds no capability.
foreign import ccall safe "flushEventLog" flushEventLog :: Ptr () -> IO ()

-- The bytes of one "fill R I" user event: type, time, length, 19 chars.
eventBytes :: Int
eventBytes = 2 + 8 + 2 + 19

pad :: Int -> Int -> String
pad n x = let s = show x in replicate (n - length s) '0' ++ s

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    putStrLn "ready"
    loop
  where
    loop = do
        eof <- isEOF
        unless eof $ do
            ws <- words <$> getLine
            case ws of
                ["fill", n] | [(k, "")] <- reads n -> fill k >> loop
                ["size", b] | [(v, "")] <- reads b -> do
                    rc <- elsSetBufferSize (fromIntegral (v :: Integer))
                    now <- elsBufferSize
                    putStrLn ("size " ++ show rc ++ " " ++ show now)
                    loop
                _ -> return ()
    fill :: Int -> IO ()
    fill k = do
        size <- fromIntegral <$> elsBufferSize
        let events = size * 135 `div` 100 `div` eventBytes
        forM_ [1 .. k] $ \r -> do
            done <- newEmptyMVar
            _ <- forkOn 1 $ do
                forM_ [1 .. events] $ \i ->
                    traceEventIO ("fill " ++ pad 6 r ++ " " ++ pad 7 i)
                putMVar done ()
            takeMVar done
            flushEventLog nullPtr
        putStrLn ("filled " ++ show k)
