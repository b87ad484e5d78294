-- | Control of a live GHC eventlog from Haskell: flush it, stop and start
-- the stream, choose the sink, and read the delivery counters of
-- libeventlog-sink.
--
-- This module only calls C: the RTS's @flushEventLog@ (added by the
-- eventlog-sink RTS patches, @rts/EventLogControl.h@) and the functions of
-- @\<eventlog-sink\/ghc.h\>@.  It does not post events (use
-- "Debug.Trace"), pick the sink from the command line (that is
-- @+RTS --eventlog-sink=SPEC@), or deliver anything (the library's writer
-- thread does).
--
-- __Requirements.__  Link against the patched RTS and the library: build
-- with @ghc-eventlog-sink@ (or @cabal build
-- --with-compiler=ghc-eventlog-sink@), @-eventlog@, and @-threaded@ if
-- Haskell threads run while you flush, stop or start.  A stock RTS has no
-- @flushEventLog@: linking fails with an undefined reference to it.
--
-- __Which calls block.__  'flush', 'stop', 'start', 'configure' and
-- 'stats' are /safe/ foreign calls: the calling Haskell thread gives up
-- its capability for the duration, so other Haskell threads keep running
-- (with @-threaded@) and the RTS can stop every capability, which
-- 'flush', 'stop' and 'start' ask it to do.  An /unsafe/ call would keep
-- its capability while the RTS waits for all of them: a deadlock.  Only
-- the name lookups behind 'SinkError' and the drop cause names are unsafe
-- calls: they read constant tables and take no lock.
--
-- Import it qualified:
--
-- > import qualified GHC.Eventlog.Sink as Sink
-- >
-- > main = do
-- >   traceMarkerIO "ready"
-- >   Sink.flush                 -- "ready" is now on its way to consumers
-- >   Sink.stats >>= either print (print . Sink.accepted)
{-# LANGUAGE ForeignFunctionInterface #-}
{-# LANGUAGE PatternSynonyms #-}
module GHC.Eventlog.Sink
  ( -- * Flushing
    flush

    -- * Stopping and starting the stream
  , stop
  , start

    -- * Choosing the sink
  , configure

    -- * Snapshots
  , snapshot
  , onSnapshot

    -- * Flight recorder
  , ringDump

    -- * Event classes
  , EventClass (..)
  , classLetter
  , getClasses
  , setClasses
  , changeClasses

    -- * Buffer size
  , bufferSize
  , setBufferSize

    -- * Counters
  , stats
  , Stats (..)
  , Counts (..)
  , ReasonCounts (..)
  , totalDropped

    -- * Errors
  , SinkError (..)
  , ErrorCode (..)
  , errorCodeName
  , errorCodeText
  , pattern ErrInvalid
  , pattern ErrNoScheme
  , pattern ErrNameTooLong
  , pattern ErrAddrInUse
  , pattern ErrExist
  , pattern ErrBusy
  , pattern ErrNoMem
  , pattern ErrStopped
  , pattern ErrNotSupported
  , pattern ErrLimit
  ) where

import Control.Concurrent (rtsSupportsBoundThreads)
import Control.Concurrent.MVar (MVar, modifyMVar_, newMVar)
import Control.Exception (Exception, SomeException, displayException, throwIO, try)
import Control.Monad (forM, forM_, unless)
import Data.IORef (IORef, atomicModifyIORef', newIORef, readIORef)
import Data.Word (Word64)
import Foreign.C.String (CString, peekCString, withCString)
import Foreign.C.Types (CInt (..), CLong (..), CSize (..))
import Foreign.Marshal.Alloc (allocaBytes)
import Foreign.Ptr (FunPtr, Ptr, nullPtr)
import Foreign.StablePtr (castStablePtrToPtr, freeStablePtr, newStablePtr)
import Foreign.Storable (peekByteOff)
import GHC.IO (unsafeUnmask)
import System.IO.Unsafe (unsafeDupablePerformIO, unsafePerformIO)

#include "eventlog-sink.h"

------------------------------------------------------------------------
-- Flushing

-- | Write out the eventlog's buffers (every capability's and the global
-- one) and ask the sink to push them to its consumers: everything this
-- and every other Haskell thread posted before the call is on its way
-- when it returns.  Without it, events wait until a 2 MiB buffer fills,
-- the periodic flush (@+RTS --eventlog-flush-interval=SECS@) runs, or the
-- program exits.  GHC 9.0.2's base has no @flushEventLog@; this is it.
--
-- /Who may call it/: any Haskell thread, at any time; while the eventlog
-- is stopped it does nothing.  Concurrent 'flush', 'stop' and 'start'
-- calls are serialised by the RTS.
--
-- /What it blocks/: the calling thread until every capability has reached
-- a safe point and its buffer has been copied into the library's queue
-- (under @policy=block@ that may wait for room in the queue: see the
-- spec's @block:MS@ and @linger=@); each capability pauses while its own
-- buffer is written out.  It does not wait for consumers to receive the
-- events.
flush :: IO ()
flush = c_flushEventLog nullPtr

-- Safe: the RTS stops capabilities to write out their buffers.  NULL
-- says the caller holds no capability, which a safe call guarantees.
foreign import ccall safe "flushEventLog"
  c_flushEventLog :: Ptr (Ptr ()) -> IO ()

------------------------------------------------------------------------
-- Stopping and starting the stream

-- | Stop the eventlog: every consumer receives the rest of the stream and
-- its end marker, and the sink is closed (a UNIX socket or FIFO the sink
-- created is removed).  Events posted while it is stopped are not
-- recorded.  Does nothing if the eventlog is not running.
--
-- /Who may call it/: any Haskell thread, also while others post events.
--
-- /What it blocks/: the calling thread while every capability is stopped
-- and its buffer written out (all Haskell threads pause for that short
-- time), then while the library delivers what is queued, for at most the
-- spec's @linger=@ time (5 s by default).  Other threads run during the
-- second part; their 'flush', 'stop' and 'start' calls wait for it.
stop :: IO ()
stop = c_els_ghc_stop

-- | Start the eventlog again after 'stop': the configured sink (the
-- last 'configure', else the one @+RTS --eventlog-sink@ chose) is opened
-- anew and every consumer gets a fresh stream, header first.  The event
-- classes are those of @-l@ at start-up.
--
-- Errors: 'ErrBusy' if the eventlog runs already (with this sink or with
-- another writer, such as @+RTS -l@'s file); 'ErrInvalid' if no sink was
-- configured ('configure', or @+RTS --eventlog-sink@ at start-up);
-- 'ErrNoScheme' if the program has no eventlog support (link with
-- @-eventlog@); or why the sink could not be opened ('ErrAddrInUse', a
-- path refused, ...).  After an error the eventlog stays stopped and a
-- later 'start' may succeed.
--
-- /Who may call it/: any Haskell thread.
--
-- /What it blocks/: the calling thread while the sink opens (with
-- @wait=SECS@ in the spec, until a first consumer connects or SECS pass),
-- then briefly every capability while the buffers are reset.
start :: IO (Either SinkError ())
start = unitResult "start" <$> c_els_ghc_start

-- Safe: both stop every capability inside the RTS and wait for the
-- writer thread (stop) or for the sink to open (start).
foreign import ccall safe "els_ghc_stop" c_els_ghc_stop :: IO ()
foreign import ccall safe "els_ghc_start" c_els_ghc_start :: IO CInt

------------------------------------------------------------------------
-- Choosing the sink

-- | Choose the sink the next 'start' opens, with the spec syntax of
-- @+RTS --eventlog-sink@ (@\"unix:\/tmp\/app.sock?policy=drop\"@,
-- @\"tcp:127.0.0.1:4242\"@, ...; several sinks at once as
-- @\"unix:\/tmp\/app.sock|ring:\/tmp\/app.eventlog?size=64M\"@, up to four).
-- Checks the spec (syntax, scheme, options) and opens nothing.  Between 'stop' and 'start' it moves the
-- stream to another sink.  (A program started without @-l@ or
-- @--eventlog-sink@ may configure and start a sink too, but GHC 9.0.2
-- then has every event class off: such a stream holds little more than
-- its header.)
--
-- Errors: 'ErrInvalid' or 'ErrNoScheme' with the library's one-line
-- explanation in 'errorMessage'; 'ErrBusy' while the eventlog runs with
-- this library's sink ('stop' it first).
--
-- /Who may call it/: any Haskell thread.  /What it blocks/: nothing
-- beyond a short lock.
configure :: String -> IO (Either SinkError ())
configure spec =
  withCString spec $ \cspec ->
    allocaBytes errLen $ \errBuf -> do
      r <- c_els_ghc_configure cspec errBuf (fromIntegral errLen)
      if r == 0
        then pure (Right ())
        else do
          line <- peekCString errBuf
          let e = sinkError "configure" (ErrorCode r)
          pure (Left (if null line then e else e {errorMessage = line}))
  where
    errLen = 512

-- Safe: it takes the library's lock, which a start in progress holds.
foreign import ccall safe "els_ghc_configure"
  c_els_ghc_configure :: CString -> CString -> CSize -> IO CInt

------------------------------------------------------------------------
-- Snapshots

-- | Put a snapshot of the program's state into the stream of every
-- consumer: the wall clock, the label and state of every live Haskell
-- thread, the heap figures and the event classes, between a begin and an
-- end event (new event types the stream's header describes, so readers
-- that do not know them skip them).  It creates no thread or task again,
-- so streams already running stay valid for @ghc-events validate@ and
-- ThreadScope.  (A consumer that joins later gets a full snapshot of its
-- own from the library.)  'ErrStopped' while the eventlog is stopped,
-- 'ErrNotSupported' on a stock RTS.
--
-- /Who may call it/: any Haskell thread.  /What it blocks/: the calling
-- thread while every capability is stopped and the snapshot written (all
-- Haskell threads pause for that time, which grows with their number).
snapshot :: IO (Either SinkError ())
snapshot = unitResult "snapshot" <$> c_els_ghc_snapshot

-- Safe: the RTS stops every capability.
foreign import ccall safe "els_ghc_snapshot" c_els_ghc_snapshot :: IO CInt

-- | Run an action after every snapshot that starts a stream, so that a
-- library can post its own start-up state (an id-to-name table) again
-- with ordinary 'Debug.Trace.traceEventIO' calls, for consumers that
-- were not there when it first did.  Such a snapshot is taken
--
-- * for a consumer that joins a running stream after its start has left
--   the sink's queue (@buffer=@);
-- * at the start of a stream: a restart ('stop', then 'start'), and a
--   'System.Posix.Process.forkProcess' child's first stream of its own.
--
-- A consumer that joins sees the stream's header, the library's note
-- that it joined mid-run, the snapshot of the program's state, and then
-- the events the actions post (among whatever else the program posts
-- meanwhile): the library writes the buffers out right after the actions
-- ran, so they come at once.  Every consumer receives them, not only the
-- new one: post state that may be posted twice.
--
-- > import qualified GHC.Eventlog.Sink as Sink
-- > import Debug.Trace (traceEventIO)
-- >
-- > postNames :: IO ()
-- > postNames = mapM_ (\(i, n) -> traceEventIO ("name " ++ show i ++ " " ++ n)) table
-- >
-- > main = do
-- >   postNames                  -- the consumers there at the start
-- >   Sink.onSnapshot postNames  -- every later one
--
-- /Where it runs/: on a thread of the library (a bound Haskell thread, on
-- an OS thread of its own), never on the thread that took the snapshot
-- and never while capabilities are stopped; the actions registered run
-- one after another, in order.  It may block: that delays only the
-- actions' later runs, which are then merged into one; the stream and the
-- consumers go on.  An action that throws is caught: the library counts
-- it and says so through its log hook (one line, \"snapshot hook failed:
-- ...\"); the others still run, and so does it the next time.
--
-- /Limits/: any number of actions, registered from any thread, for the
-- rest of the program (there is no unregistering).  The threaded RTS
-- only (@-threaded@): another OS thread cannot enter the non-threaded
-- RTS, so there it throws 'ErrNotSupported'.  Needs the library's sink on
-- the patched RTS (@+RTS --eventlog-sink@, or 'configure' and 'start'):
-- with a stock RTS, or @+RTS -l@'s own file, no snapshot starts a stream
-- and the actions never run.  Throws a 'SinkError' if the library has no
-- room for its hook (it takes one of 16, once).
onSnapshot :: IO () -> IO ()
onSnapshot action = do
  unless rtsSupportsBoundThreads $
    throwIO (sinkError "onSnapshot" ErrNotSupported)
  modifyMVar_ hookRegistered $ \registered -> do
    unless registered $ do
      sp <- newStablePtr runSnapshotHooks
      r <- c_els_ghc_on_snapshot c_els_ghc_haskell_hook (castStablePtrToPtr sp)
      unless (r == 0) $ do
        freeStablePtr sp
        throwIO (sinkError "onSnapshot" (ErrorCode r))
    atomicModifyIORef' snapshotHooks (\hs -> (hs ++ [action], ()))
    pure True

-- The actions, in registration order; the library calls
-- runSnapshotHooks through its one C hook.
snapshotHooks :: IORef [IO ()]
snapshotHooks = unsafePerformIO (newIORef [])
{-# NOINLINE snapshotHooks #-}

-- Whether that C hook is registered; held while registering it.
hookRegistered :: MVar Bool
hookRegistered = unsafePerformIO (newMVar False)
{-# NOINLINE hookRegistered #-}

-- rts_evalStableIO starts it with asynchronous exceptions masked; each
-- action runs as a Haskell thread normally does (unmasked), and what it
-- throws is counted and logged by the library.
runSnapshotHooks :: IO ()
runSnapshotHooks = do
  actions <- readIORef snapshotHooks
  forM_ actions $ \act -> do
    r <- try (unsafeUnmask act)
    case r of
      Right () -> pure ()
      Left e -> withCString (displayException (e :: SomeException)) c_els_ghc_hook_failed

-- Safe: it takes the library's hook lock, never for long.
foreign import ccall safe "els_ghc_on_snapshot"
  c_els_ghc_on_snapshot :: FunPtr (Ptr () -> IO ()) -> Ptr () -> IO CInt

foreign import ccall "&els_ghc_haskell_hook"
  c_els_ghc_haskell_hook :: FunPtr (Ptr () -> IO ())

-- Safe: the log hook it calls may take its time.
foreign import ccall safe "els_ghc_hook_failed"
  c_els_ghc_hook_failed :: CString -> IO ()

------------------------------------------------------------------------
-- Flight recorder

-- | With a flight recorder (@+RTS --eventlog-sink=ring:PATH?size=64M@, or
-- the first @ring:@ of a list of sinks),
-- write the window it keeps into a new file now and return its name
-- (@PATH.1@, @PATH.2@, ...): a valid eventlog on its own, from a snapshot
-- of the program's state to the events written out so far (call 'flush'
-- first to include the latest).  'ErrInvalid' if the sink is not a flight
-- recorder, 'ErrLimit' once it wrote its @max-dumps=@ dumps, 'ErrStopped'
-- without the library's sink.
--
-- /Who may call it/: any Haskell thread.  /What it blocks/: the calling
-- thread until the library's writer thread has written the file (at most
-- @size=@ bytes); no capability is stopped.
ringDump :: IO (Either SinkError FilePath)
ringDump =
  allocaBytes nameLen $ \p -> do
    r <- c_els_ghc_ring_dump p (fromIntegral nameLen)
    if r /= 0
      then pure (Left (sinkError "ringDump" (ErrorCode r)))
      else Right <$> peekCString p
  where
    nameLen = 4096

-- Safe: it waits for the writer thread to write the dump.
foreign import ccall safe "els_ghc_ring_dump"
  c_els_ghc_ring_dump :: CString -> CSize -> IO CInt

------------------------------------------------------------------------
-- Event classes

-- | The classes of events of @+RTS -l@, which can be turned on and off
-- while the program runs.
data EventClass
  = Scheduler      -- ^ @s@: threads, tasks, capabilities
  | GC             -- ^ @g@: garbage collections and heap figures
  | NonmovingGC    -- ^ @n@: the nonmoving collector's census
  | SparksSampled  -- ^ @p@: spark counters, sampled
  | SparksFull     -- ^ @f@: every spark event
  | User           -- ^ @u@: 'Debug.Trace.traceEventIO' and markers
  deriving (Eq, Ord, Show, Enum, Bounded)

-- | The @-l@ letter of a class.
classLetter :: EventClass -> Char
classLetter c = "sgnpfu" !! fromEnum c

-- | The classes that are on now.  Any thread; never blocks.
getClasses :: IO (Either SinkError [EventClass])
getClasses =
  allocaBytes 16 $ \buf -> do
    r <- c_els_ghc_get_classes buf 16
    if r /= 0
      then pure (Left (sinkError "getClasses" (ErrorCode r)))
      else do
        letters <- peekCString buf
        pure (Right [c | c <- [minBound .. maxBound], classLetter c `elem` letters])

-- | Turn on exactly the given classes (the others off).
setClasses :: [EventClass] -> IO (Either SinkError ())
setClasses cs
  | null cs = changeClasses (concatMap (\c -> ['-', classLetter c]) [minBound .. maxBound])
  | otherwise = changeClasses (map classLetter cs)

-- | Change classes with @-l@ letters: @\"sgu\"@ turns on exactly these,
-- @\"-s+f\"@ (a string that starts with a sign) changes the current set:
-- scheduler off, full sparks on.  @a@ stands for @sgpfu@.  Every change
-- takes effect at one point all capabilities agree on, and the stream
-- records it.  'ErrInvalid' (with the library's one-line reason) for an
-- unknown letter; 'ErrNotSupported' on a stock RTS.
--
-- /Who may call it/: any Haskell thread, also while others post.
-- /What it blocks/: the calling thread while every capability is stopped,
-- once per class that changes (all Haskell threads pause briefly).
changeClasses :: String -> IO (Either SinkError ())
changeClasses letters =
  withCString letters $ \cl ->
    allocaBytes errLen $ \errBuf -> do
      r <- c_els_ghc_set_classes cl errBuf (fromIntegral errLen)
      if r == 0
        then pure (Right ())
        else do
          line <- peekCString errBuf
          let e = sinkError "changeClasses" (ErrorCode r)
          pure (Left (if null line then e else e {errorMessage = line}))
  where
    errLen = 256

-- Safe: each change stops every capability.
foreign import ccall safe "els_ghc_set_classes"
  c_els_ghc_set_classes :: CString -> CString -> CSize -> IO CInt

-- Unsafe: reads a few ints, no lock.
foreign import ccall unsafe "els_ghc_get_classes"
  c_els_ghc_get_classes :: CString -> CSize -> IO CInt

------------------------------------------------------------------------
-- Buffer size

-- | Each capability's eventlog buffer, in bytes (@+RTS
-- --eventlog-buffer-size=SIZE@, default 2 MiB).  Any thread; never
-- blocks.  'ErrNotSupported' on a stock RTS.
bufferSize :: IO (Either SinkError Int)
bufferSize = do
  r <- c_els_ghc_buffer_size
  pure (if r < 0 then Left (sinkError "bufferSize" (ErrorCode (fromIntegral r)))
                 else Right (fromIntegral r))

-- | Change it: with every capability stopped, each buffer is written out
-- and replaced by one of the new size.  'ErrInvalid' outside 64 KiB to
-- 1 GiB.  /Blocks/ the calling thread while every capability is stopped.
setBufferSize :: Int -> IO (Either SinkError ())
setBufferSize n
  | n < 0 = pure (Left (sinkError "setBufferSize" ErrInvalid))
  | otherwise = unitResult "setBufferSize" <$> c_els_ghc_set_buffer_size (fromIntegral n)

foreign import ccall unsafe "els_ghc_buffer_size"
  c_els_ghc_buffer_size :: IO CLong

-- Safe: the RTS stops every capability.
foreign import ccall safe "els_ghc_set_buffer_size"
  c_els_ghc_set_buffer_size :: CSize -> IO CInt

------------------------------------------------------------------------
-- Counters

-- | A number of units (whole buffers the RTS handed over: the header, a
-- block of events, the end marker) and their size in bytes.
data Counts = Counts
  { units :: !Word64
  , bytes :: !Word64
  }
  deriving (Eq, Show)

-- | Units accepted, by why the RTS wrote them (reported by the patched
-- RTS; a stock RTS's units count as 'reasonUnknown').
data ReasonCounts = ReasonCounts
  { reasonUnknown :: !Word64
  , reasonStart :: !Word64      -- ^ the header of a new stream
  , reasonBufferFull :: !Word64 -- ^ a capability's buffer had no room
  , reasonFlush :: !Word64      -- ^ 'flush' or the periodic flush
  , reasonStop :: !Word64       -- ^ 'stop' or the program's exit
  , reasonSnapshot :: !Word64   -- ^ a 'snapshot' for every consumer
  }
  deriving (Eq, Show)

-- | The counters of the running sink since it was opened (a 'start'
-- opens it anew and starts from zero).  At every instant, for units and
-- bytes alike:
--
-- > accepted == sent + totalDropped + queued
--
-- where /sent/ means delivered in full to at least one consumer.
data Stats = Stats
  { accepted :: !Counts
  , sent :: !Counts
  , dropped :: [(String, Counts)]
    -- ^ Every drop cause the library knows, in its order, each named by
    -- the library (@\"queue-full\"@, @\"no-consumer\"@, ...).
  , queued :: !Counts
  , consumerLost :: !Counts
    -- ^ Units that some consumer received and another missed (a slow
    -- consumer cut loose, one whose writes failed).  They count as sent.
  , consumersConnected :: !Word64 -- ^ right now
  , consumersTotal :: !Word64     -- ^ ever attached, including now
  , headerBytes :: !Word64        -- ^ size of the cached stream header
  , byReason :: !ReasonCounts
  , consumersBehindAtStop :: !Word64
    -- ^ consumers still behind when the stop deadline (@linger=@) expired:
    -- their streams end without the end marker
  , consumersRefused :: !Word64
    -- ^ connections closed at once: the sink had @max-consumers=@ already
  , consumersDroppedMemory :: !Word64
    -- ^ consumers closed because what they needed did not fit in
    -- @consumer-memory=@
  , consumerMemory :: !Word64     -- ^ bytes held for individual consumers now
  , consumerMemoryPeak :: !Word64 -- ^ the most ever held for them
  , acceptErrors :: !Word64
    -- ^ failed @accept()@ calls on a listening sink (out of descriptors...)
  , joinSnapshots :: !Counts
    -- ^ snapshots taken for consumers that joined mid-stream (not part of
    -- the stream, so not in 'accepted')
  , joinSnapshotsNotQueued :: !Word64
    -- ^ such snapshots that found no room (asked for again once there
    -- is room)
  , joinersWithSnapshot :: !Word64
    -- ^ consumers that joined mid-stream and started at a snapshot
  , joinersWithoutSnapshot :: !Word64
    -- ^ consumers that joined mid-stream without one (a stock RTS, or none
    -- came in time): they start at the oldest queued unit, told in-band
  , behindAtStop :: !Counts
    -- ^ what the consumers in 'consumersBehindAtStop' never received,
    -- summed over them: units not received in full, and their bytes
  }
  deriving (Eq, Show)

-- | The sum of 'dropped' over every cause.
totalDropped :: Stats -> Counts
totalDropped s =
  Counts (sum (map (units . snd) (dropped s))) (sum (map (bytes . snd) (dropped s)))

-- | Read the counters of the running sink.  'ErrStopped' while the
-- eventlog is stopped or runs without this library's sink.
--
-- /Who may call it/: any Haskell thread, at any time, also while another
-- stops or starts the stream.  /What it blocks/: nothing beyond the
-- library's short counter lock; it stops no capability.
stats :: IO (Either SinkError Stats)
stats =
  allocaBytes (#size struct els_stats) $ \p -> do
    r <- c_els_ghc_stats_sized p (#size struct els_stats)
    if r /= 0
      then pure (Left (sinkError "stats" (ErrorCode r)))
      else Right <$> peekStats p

peekStats :: Ptr () -> IO Stats
peekStats p = do
  drops <- forM [0 .. dropCauses - 1] $ \i -> do
    name <- peekCString =<< c_els_drop_cause_name (fromIntegral i)
    u <- word (#{offset struct els_stats, units_dropped} + counter * i)
    b <- word (#{offset struct els_stats, bytes_dropped} + counter * i)
    pure (name, Counts u b)
  Stats
    <$> counts (#offset struct els_stats, units_accepted) (#offset struct els_stats, bytes_accepted)
    <*> counts (#offset struct els_stats, units_sent) (#offset struct els_stats, bytes_sent)
    <*> pure drops
    <*> counts (#offset struct els_stats, units_queued) (#offset struct els_stats, bytes_queued)
    <*> counts (#offset struct els_stats, consumer_lost_units) (#offset struct els_stats, consumer_lost_bytes)
    <*> word (#offset struct els_stats, consumers_connected)
    <*> word (#offset struct els_stats, consumers_total)
    <*> word (#offset struct els_stats, header_bytes)
    <*> ( ReasonCounts
            <$> reason (#const ELS_REASON_UNKNOWN)
            <*> reason (#const ELS_REASON_START)
            <*> reason (#const ELS_REASON_BUFFER_FULL)
            <*> reason (#const ELS_REASON_FLUSH)
            <*> reason (#const ELS_REASON_STOP)
            <*> reason (#const ELS_REASON_SNAPSHOT)
        )
    <*> word (#offset struct els_stats, consumers_behind_at_stop)
    <*> word (#offset struct els_stats, consumers_refused)
    <*> word (#offset struct els_stats, consumers_dropped_memory)
    <*> word (#offset struct els_stats, consumer_memory)
    <*> word (#offset struct els_stats, consumer_memory_peak)
    <*> word (#offset struct els_stats, accept_errors)
    <*> counts (#offset struct els_stats, snapshot_units) (#offset struct els_stats, snapshot_bytes)
    <*> word (#offset struct els_stats, snapshots_not_queued)
    <*> word (#offset struct els_stats, joiners_with_snapshot)
    <*> word (#offset struct els_stats, joiners_without_snapshot)
    <*> counts (#offset struct els_stats, behind_at_stop_units) (#offset struct els_stats, behind_at_stop_bytes)
  where
    -- Every counter is a uint64_t; arrays are indexed by the header's
    -- enum constants, so a reordered or grown enum only needs a rebuild.
    word :: Int -> IO Word64
    word = peekByteOff p
    counts u b = Counts <$> word u <*> word b
    reason i = word (#{offset struct els_stats, units_by_reason} + counter * i)
    counter = #size uint64_t

-- The number of drop causes in this build's header; their names come
-- from the library at run time.
dropCauses :: Int
dropCauses = #const ELS_DROP__COUNT

-- Safe: it takes the writer's counter lock, which the writer thread and
-- posting capabilities also take; a short wait, but a wait.  The size is
-- this binding's struct els_stats, as hsc2hs read it from the header: the
-- library writes no more than that (els_ghc_stats() is an inline wrapper
-- in C, so there is no symbol of that name to import).
foreign import ccall safe "els_ghc_stats_sized"
  c_els_ghc_stats_sized :: Ptr () -> CSize -> IO CInt

-- Unsafe: a lookup in a constant table; no lock, no allocation.
foreign import ccall unsafe "els_drop_cause_name"
  c_els_drop_cause_name :: CInt -> IO CString

------------------------------------------------------------------------
-- Errors

-- | A code of libeventlog-sink: a negative errno value.  The patterns
-- below are the library's own codes, each with one meaning
-- (@\<eventlog-sink.h\>@); any other value is an operating-system error
-- passed through.
newtype ErrorCode = ErrorCode CInt
  deriving (Eq, Ord)

instance Show ErrorCode where
  show = errorCodeName

-- | A malformed spec, option or argument; or no sink configured.
pattern ErrInvalid :: ErrorCode
pattern ErrInvalid = ErrorCode (#const ELS_EINVAL)

-- | The spec's scheme is not registered, or the program has no RTS
-- eventlog support.
pattern ErrNoScheme :: ErrorCode
pattern ErrNoScheme = ErrorCode (#const ELS_ENOSCHEME)

-- | A path does not fit (a UNIX socket path longer than @sun_path@).
pattern ErrNameTooLong :: ErrorCode
pattern ErrNameTooLong = ErrorCode (#const ELS_ENAMETOOLONG)

-- | The address is taken (a TCP port, a UNIX socket path another process
-- listens on).
pattern ErrAddrInUse :: ErrorCode
pattern ErrAddrInUse = ErrorCode (#const ELS_EADDRINUSE)

-- | Something that will not be replaced is in the way (a file where the
-- socket or FIFO is to be created).
pattern ErrExist :: ErrorCode
pattern ErrExist = ErrorCode (#const ELS_EEXIST)

-- | The eventlog runs already, or a start is under way.
pattern ErrBusy :: ErrorCode
pattern ErrBusy = ErrorCode (#const ELS_EBUSY)

-- | Memory could not be allocated.
pattern ErrNoMem :: ErrorCode
pattern ErrNoMem = ErrorCode (#const ELS_ENOMEM)

-- | The sink is not running.
pattern ErrStopped :: ErrorCode
pattern ErrStopped = ErrorCode (#const ELS_ESTOPPED)

-- | The running RTS cannot do it (a stock RTS, without the eventlog-sink
-- patches).
pattern ErrNotSupported :: ErrorCode
pattern ErrNotSupported = ErrorCode (#const ELS_ENOTSUP)

-- | A bound the spec sets is reached: the flight recorder wrote its
-- @max-dumps=@ dumps and writes no more.
pattern ErrLimit :: ErrorCode
pattern ErrLimit = ErrorCode (#const ELS_ELIMIT)

-- | A failed call: which function, the code, and the library's text.
-- An 'Exception', for @either throwIO pure@.
data SinkError = SinkError
  { errorCall :: String    -- ^ @\"start\"@, @\"configure\"@, @\"stats\"@
  , errorCode :: !ErrorCode
  , errorMessage :: String
    -- ^ The library's explanation: the one line that 'configure' gets
    -- for a bad spec, else the code's text ('errorCodeText').
  }
  deriving (Eq)

instance Show SinkError where
  show e = errorCall e ++ ": " ++ errorCodeName (errorCode e) ++ ": " ++ errorMessage e

instance Exception SinkError

-- | The library's name for a code (@\"ELS_EBUSY\"@, or the errno name,
-- @\"ETIMEDOUT\"@, for a passed-through system error).
errorCodeName :: ErrorCode -> String
errorCodeName (ErrorCode c) = staticString (c_els_err_name c)

-- | The library's text for a code.
errorCodeText :: ErrorCode -> String
errorCodeText (ErrorCode c) = staticString (c_els_strerror c)

-- Both functions return a pointer to a constant string for any input,
-- so reading it is pure.
staticString :: IO CString -> String
staticString get = unsafeDupablePerformIO (get >>= peekCString)

sinkError :: String -> ErrorCode -> SinkError
sinkError call code = SinkError call code (errorCodeText code)

unitResult :: String -> CInt -> Either SinkError ()
unitResult _ 0 = Right ()
unitResult call r = Left (sinkError call (ErrorCode r))

-- Unsafe: lookups in constant tables (glibc's for errno values); no
-- lock, no allocation, never block.
foreign import ccall unsafe "els_err_name" c_els_err_name :: CInt -> IO CString
foreign import ccall unsafe "els_strerror" c_els_strerror :: CInt -> IO CString
