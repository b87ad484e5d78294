// test_headers_cxx.cc: the public headers compile as C++ and declare
// C linkage.
#include "eventlog-sink.h"
#include "eventlog-sink/sink.h"
#include "eventlog-sink/parse.h"
#include "eventlog-sink/control.h"
#include "eventlog-sink/discovery.h"

extern "C" int cxx_headers_ok(void);

extern "C" int cxx_headers_ok(void)
{
    els_sink_ops ops = {};
    ops.struct_size = sizeof ops;
    els_event_data d = {};
    (void)d;
    (void)&els_parser_new;
    (void)&els_err_name;
    els_stats s = {};
    (void)s;
    (void)&els_writer_open;
    (void)&els_sink_register;
    (void)&els_control_register;
    (void)&els_control_proof;
    return static_cast<int>(ops.struct_size);
}
