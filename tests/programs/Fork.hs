-- Fork.hs: a program for tests/rts/test_fork.sh.  The parent posts events,
-- forks with the RTS's forkProcess (System.Posix.Process, from the `unix'
-- package GHC ships), waits for the child and posts more events.  The
-- child posts its own events and exits normally.  With a CHILD-SPEC the
-- child first stops the eventlog it inherited, configures that sink (an
-- address of its own) and starts it, so that its events are streamed too.
--
-- Usage: fork-test N [CHILD-SPEC]
-- Prints "child started: RC" (with CHILD-SPEC), "child done",
-- "child exited: STATUS" and "parent done" on stdout.
module Main (main) where

import Control.Monad (forM_, when)
import Debug.Trace (traceEventIO)
import Foreign.C.String (CString, withCString)
import Foreign.C.Types (CInt (..), CSize (..))
import Foreign.Marshal.Alloc (allocaBytes)
import Foreign.Ptr (Ptr)
import System.Environment (getArgs)
import System.Exit (exitFailure)
import System.IO
import System.Posix.Process (forkProcess, getProcessStatus)

foreign import ccall safe "els_ghc_stop" elsStop :: IO ()
foreign import ccall safe "els_ghc_start" elsStart :: IO CInt
foreign import ccall safe "els_ghc_configure"
    elsConfigure :: CString -> Ptr a -> CSize -> IO CInt

post :: String -> Int -> IO ()
post what n = forM_ [1 .. n] $ \i -> traceEventIO ("fork-test " ++ what ++ " " ++ show i)

child :: Int -> Maybe String -> IO ()
child n spec = do
    case spec of
        Nothing -> return ()
        Just s -> do
            elsStop
            rc <- withCString s $ \cs -> allocaBytes 512 $ \err ->
                elsConfigure cs err 512
            when (rc /= 0) $ do
                hPutStrLn stderr ("fork-test: els_ghc_configure returned " ++ show rc)
                exitFailure
            started <- elsStart
            putStrLn ("child started: " ++ show started)
    post "child" n
    putStrLn "child done"

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    args <- getArgs
    (n, spec) <- case args of
        [a] -> return (read a, Nothing)
        [a, s] -> return (read a, Just s)
        _ -> hPutStrLn stderr "usage: fork-test N [CHILD-SPEC]" >> exitFailure
    post "parent before" n
    hFlush stdout
    pid <- forkProcess (child n spec)
    st <- getProcessStatus True False pid
    putStrLn ("child exited: " ++ show st)
    post "parent after" n
    putStrLn "parent done"
