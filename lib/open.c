/*
 * open.c: els_writer_open(), the one place the library's layers are put
 * together: the writer of lib/writer with the control channel of
 * lib/control as the layer above it (its ops table, writer/writer_ops.h).
 * Delivery never names control, and control sees the writer only through
 * that table, so this file is the only one that names both.
 *
 * Not this file's job: what opening does (writer/writer.c), what the
 * ops do (control/control.c).
 */
#include "control/control.h"
#include "writer/writer_ops.h"
#include "eventlog-sink.h"

int els_writer_open(const char *spec, struct els_writer **out,
                    char *err, size_t err_len)
{
    return elsi_writer_open(spec, &elsi_control_ops, out, err, err_len);
}
