-- Exec.hs: a program that replaces itself with another
-- (tests/tools/test_discovery.sh).  It prints "ready", waits for a line
-- on stdin, then execve()s PROGRAM ARGS (searching PATH) without
-- stopping its eventlog: its pid and start time stay, while the RTS,
-- the library and every socket they held (all close-on-exec) are gone.
-- It is not responsible for where its eventlog goes (+RTS
-- --eventlog-sink).  Usage: exec PROGRAM [ARGS...].  base and unix.
module Main (main) where

import System.Environment (getArgs)
import System.Exit
import System.IO
import System.Posix.Process (executeFile)

main :: IO ()
main = do
    hSetBuffering stdout LineBuffering
    args <- getArgs
    case args of
        prog : rest -> do
            putStrLn "ready"
            _ <- getLine
            executeFile prog True rest Nothing
        [] -> hPutStrLn stderr "usage: exec PROGRAM [ARGS...]" >> exitWith (ExitFailure 2)
