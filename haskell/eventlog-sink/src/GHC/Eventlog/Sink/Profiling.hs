-- | Control of the RTS profilers of a running program: the heap profile
-- timer, heap censuses on request, and the time (cost-centre) profiler.
-- What they produce reaches the eventlog, and so every consumer of the
-- stream, as heap samples and cost-centre samples.
--
-- This module only calls the C functions @els_ghc_heap_profiling@,
-- @els_ghc_heap_census@ and @els_ghc_time_profiling@ of
-- @\<eventlog-sink\/ghc.h\>@.  It does not choose what is profiled: that is
-- the program's RTS options (@+RTS -hT@, or @-hc@, @-hy@, ... and @-p@ in
-- a program built with @-prof@), which these calls switch on and off.
--
-- __Requirements.__  Heap profiling control needs the eventlog-sink
-- patched RTS (its @requestHeapCensus@, GHC 9.2's name and meaning) and a
-- heap profiling mode on the command line; time profiling control needs a
-- profiled program (@ghc-eventlog-sink -prof@).  Where they are missing,
-- the calls return an error with code @ELS_ENOTSUP@ and change nothing.
--
-- __Which calls block.__  None: each sets a flag that the RTS's timer or
-- scheduler reads, and returns.  They are /safe/ foreign calls all the
-- same, so they may be called from any Haskell thread at any time.
--
-- > import qualified GHC.Eventlog.Sink.Profiling as Prof
-- >
-- > main = do
-- >   _ <- Prof.heapProfiling False   -- no periodic censuses
-- >   ...
-- >   _ <- Prof.heapCensus            -- one census, now
module GHC.Eventlog.Sink.Profiling
  ( -- * Heap profiling
    heapProfiling
  , heapCensus

    -- * Time profiling
  , timeProfiling
  ) where

import Foreign.C.Types (CInt (..))

import GHC.Eventlog.Sink (ErrorCode (..), SinkError (..), errorCodeText)

-- | Start ('True') or stop ('False') the heap profile timer, the periodic
-- censuses every @+RTS -i@ interval (it runs from start-up).  After a
-- stop, a census already due may still be taken; then none until a start
-- or a 'heapCensus'.
--
-- Errors: code @ELS_ENOTSUP@ unless the RTS is the eventlog-sink patched
-- one and the program runs with a heap profiling mode (@+RTS -h...@).
--
-- /Who may call it/: any Haskell thread.  /What it blocks/: nothing.
heapProfiling :: Bool -> IO (Either SinkError ())
heapProfiling on = result "heapProfiling" <$> c_els_ghc_heap_profiling (fromBool on)

-- | Ask for one heap census, whether the heap profile timer runs or not.
-- It is taken at the next context switch of a capability that runs
-- Haskell code, after this returns; requests made before it starts
-- coalesce into it.
--
-- Errors: as for 'heapProfiling'.
--
-- /Who may call it/: any Haskell thread.  /What it blocks/: nothing (the
-- census happens later, during a major garbage collection).
heapCensus :: IO (Either SinkError ())
heapCensus = result "heapCensus" <$> c_els_ghc_heap_census

-- | Start ('True') or stop ('False') the time profiler: the cost-centre
-- sample of every tick (@+RTS -p@ starts it with the program).  A stop
-- takes effect from the next tick.
--
-- Errors: code @ELS_ENOTSUP@ unless the program is profiled (built with
-- @-prof@).
--
-- /Who may call it/: any Haskell thread.  /What it blocks/: nothing.
timeProfiling :: Bool -> IO (Either SinkError ())
timeProfiling on = result "timeProfiling" <$> c_els_ghc_time_profiling (fromBool on)

fromBool :: Bool -> CInt
fromBool b = if b then 1 else 0

result :: String -> CInt -> Either SinkError ()
result _ 0 = Right ()
result call r = Left (SinkError call code (errorCodeText code))
  where
    code = ErrorCode r

-- Safe, although they only store a flag: a safe call never holds up a
-- capability the RTS may be stopping.
foreign import ccall safe "els_ghc_heap_profiling"
  c_els_ghc_heap_profiling :: CInt -> IO CInt
foreign import ccall safe "els_ghc_heap_census"
  c_els_ghc_heap_census :: IO CInt
foreign import ccall safe "els_ghc_time_profiling"
  c_els_ghc_time_profiling :: CInt -> IO CInt
