-- Greeter.hs: a program with a command of its own, registered from
-- Haskell (GHC.Eventlog.Sink.Control), for tests/control/test_control.sh.  It
-- registers "greet" (namespace "greeter", id 1), prints "registered" (or
-- the error), and runs until a line or end-of-file arrives on stdin.
-- "greet fail" fails with the text "asked to fail"; "greet boom" throws.
module Main (main) where

import Control.Exception (IOException, try)
import qualified GHC.Eventlog.Sink.Control as Control
import System.IO

main :: IO ()
main = do
  hSetBuffering stdout LineBuffering
  r <- Control.registerCommand "greeter" 1 (Just "greet") $ \args ->
         case args of
           "fail" -> return (Left "asked to fail")
           "boom" -> error "boom"
           _ -> return (Right ("hello " ++ args))
  putStrLn (either show (const "registered") r)
  _ <- try getLine :: IO (Either IOException String)
  putStrLn "greeter done"
