-- | Spans: how long a piece of work took, marked in the eventlog in one
-- line.  'withSpan' posts the user markers @NAME start@ and @NAME end@
-- around an action; eventlog-sink's timeline pairs them (per name, the
-- latest open start with the next end, across capabilities) into spans
-- and answers count, total, mean, p50, p99 and maximum per name for the
-- whole run or any range, and opens the longest one.
--
-- This module only posts markers with "Debug.Trace"'s 'traceMarkerIO';
-- it needs neither the C library nor the patched RTS, only a program
-- linked with @-eventlog@ and run with @+RTS -l@ (markers are in the
-- default classes).  Without the eventlog the markers cost a test of a
-- flag each.
--
-- > import GHC.Eventlog.Sink.Span (withSpan)
-- >
-- > handle req = withSpan "request" $ do
-- >   ...
module GHC.Eventlog.Sink.Span
  ( withSpan
  ) where

import Control.Exception (bracket_)
import Debug.Trace (traceMarkerIO)

-- | @withSpan name action@ runs @action@ between the markers
-- @name ++ " start"@ and @name ++ " end"@.  The end marker is posted
-- however the action ends (a result, an exception, an asynchronous
-- exception such as 'Control.Concurrent.killThread' or a timeout), so a
-- span is never left open by a failure; nested spans of the same name
-- pair innermost first.  The name should not vary per call (use
-- "request", not "request 42"): spans are grouped by it, and the
-- timeline keeps a bounded number of names.
withSpan :: String -> IO a -> IO a
withSpan name = bracket_ (traceMarkerIO (name ++ " start"))
                         (traceMarkerIO (name ++ " end"))
