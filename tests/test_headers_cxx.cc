// test_headers_cxx.cc: the public headers compile as C++ and declare
// C linkage.
#include "eventlog-sink.h"
#include "eventlog-sink/sink.h"

extern "C" int cxx_headers_ok(void);

extern "C" int cxx_headers_ok(void)
{
    els_sink_ops ops = {};
    ops.abi_version = ELS_SINK_ABI_VERSION;
    els_stats s = {};
    (void)s;
    (void)&els_writer_open;
    (void)&els_sink_register;
    return static_cast<int>(ops.abi_version);
}
