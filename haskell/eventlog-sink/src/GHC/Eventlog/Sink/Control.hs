{-# LANGUAGE ForeignFunctionInterface #-}
-- | Commands of the program's own, served by the control channel of a
-- socket sink with @control=1@ (docs\/CONTROL.md): @eventlog-sink ctl
-- SPEC NAME ARGS@ runs them, and so do eventlog-socket clients, with their
-- binary messages for the command's namespace and id.
--
-- This module only registers handlers with libeventlog-sink
-- (@els_control_register@ of @\<eventlog-sink\/control.h\>@).  It does not
-- run them: the library's control thread calls them, one at a time, never
-- on the writer thread.  Build with @-threaded@: a handler is Haskell code
-- called from a thread the RTS did not create.
--
-- > import qualified GHC.Eventlog.Sink.Control as Control
-- >
-- > main = do
-- >   _ <- Control.registerCommand "my-app" 1 (Just "greet") $ \args ->
-- >          return (Right ("hello " ++ args))
-- >   ...
module GHC.Eventlog.Sink.Control
  ( Handler
  , registerCommand
  ) where

import Control.Exception (SomeException, evaluate, try)
import Data.Word (Word8)
import Foreign.C.String (CString, peekCString, withCString)
import Foreign.C.Types (CChar, CInt (..), CSize (..), CUInt (..))
import Foreign.Marshal.Array (lengthArray0)
import Foreign.Marshal.Utils (copyBytes)
import Foreign.Ptr (FunPtr, Ptr, nullPtr, plusPtr)
import Foreign.Storable (pokeByteOff)
import GHC.Eventlog.Sink (ErrorCode (..), SinkError (..), errorCodeText)

-- | A command's handler: it gets the text after the command's name (@""@
-- for eventlog-socket messages, which carry none) and returns the result
-- or the reason it failed, one line each; the client receives it, with
-- status 0 or @ELS_EINVAL@.  An exception counts as a failure, its text
-- the reason.  It runs on the library's control thread: it may block, but
-- other commands wait meanwhile.
type Handler = String -> IO (Either String String)

type CHandler = Ptr () -> CString -> CString -> CSize -> IO CInt

foreign import ccall "wrapper"
  mkCHandler :: CHandler -> IO (FunPtr CHandler)

-- Takes the table's mutex for a moment; never calls back into Haskell.
foreign import ccall unsafe "els_control_register"
  c_els_control_register
    :: CString -> CUInt -> CString -> FunPtr CHandler -> Ptr () -> IO CInt

-- | @registerCommand namespace id name handler@ registers command @id@
-- (1 to 255) of @namespace@ (1 to 255 bytes, printable, no space; not
-- @\"eventlog-sink\"@ or @\"eventlog-socket\"@), with an optional text
-- name (@[a-z][a-z0-9-]*@, at most 31 bytes) for @eventlog-sink ctl@.  The
-- library's code comes back as a 'SinkError' (@ELS_EINVAL@,
-- @ELS_EEXIST@ for a taken namespace and id or name, @ELS_ENOMEM@ past 256
-- commands).  The handler is kept for the rest of the program.
registerCommand :: String -> Word8 -> Maybe String -> Handler
                -> IO (Either SinkError ())
registerCommand ns ident name handler = do
  fp <- mkCHandler (runHandler handler)
  r <- withCString ns $ \cns ->
         maybe ($ nullPtr) withCString name $ \cname ->
           c_els_control_register cns (fromIntegral ident) cname fp nullPtr
  return $ if r == 0
    then Right ()
    else Left (SinkError "registerCommand" (ErrorCode r)
                         (errorCodeText (ErrorCode r)))

-- The C side: run the handler, write its line into out (cut to fit, NUL
-- at the end), 0 or ELS_EINVAL (-EINVAL: 22 on Linux).
runHandler :: Handler -> CHandler
runHandler handler _ cargs out outLen = do
  args <- peekCString cargs
  res <- try (handler args >>= either (return . Left) (fmap Right . evaluate . force))
  let (code, text) = case res of
        Left e -> (-22, "exception: " ++ show (e :: SomeException))
        Right (Left why) -> (-22, why)
        Right (Right ok) -> (0, ok)
  writeOut out (fromIntegral outLen) text
  return code
  where
    force s = length s `seq` s

writeOut :: CString -> Int -> String -> IO ()
writeOut out len text
  | len <= 0 = return ()
  | otherwise = withCString (takeWhile (/= '\n') text) $ \src -> do
      n <- lengthArray0 0 src
      let k = min n (len - 1)
      copyBytes out src k
      pokeByteOff (out `plusPtr` k :: Ptr CChar) 0 (0 :: Word8)
