-- ThreadScopeKeeps.hs: how many events of an eventlog ThreadScope 0.2.14
-- keeps.  ThreadScope sorts the events by time and then keeps
--   zip (rights (validates capabilityTaskOSMachine sorted)) sorted
-- (its Events/ReadEvents.hs, with ghc-events 0.17): every event up to the
-- first task event it cannot match, silently dropping that one and every
-- later one.  This program applies the same rule with the same library and
-- prints "kept K of N"; a stream ThreadScope shows whole has K == N.
import Data.Either (rights)
import GHC.RTS.Events
import GHC.RTS.Events.Analysis (validates)
import GHC.RTS.Events.Analysis.Capability (capabilityTaskOSMachine)
import System.Environment (getArgs)
import System.Exit (exitFailure)
import System.IO (hPutStrLn, stderr)

main :: IO ()
main = do
  args <- getArgs
  case args of
    [file] -> do
      r <- readEventLogFromFile file
      case r of
        Left err -> hPutStrLn stderr (file ++ ": " ++ err) >> exitFailure
        Right el -> do
          let sorted = sortEvents (events (dat el))
              kept = length (zip (rights (validates capabilityTaskOSMachine sorted)) sorted)
          putStrLn ("kept " ++ show kept ++ " of " ++ show (length sorted))
    _ -> hPutStrLn stderr "usage: ThreadScopeKeeps EVENTLOG" >> exitFailure
