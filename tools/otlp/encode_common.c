/*
 * encode_common.c: what the three OTLP requests share: attributes
 * (common.v1.KeyValue/AnyValue), the resource (resource.v1.Resource) and
 * the scope (common.v1.InstrumentationScope), in both wire forms.  Field
 * numbers from opentelemetry-proto.
 */
#include "otlp/encode.h"

#include <string.h>

/* AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4. */
static void otlp_pb_anyvalue(struct otlp_buf *b, uint32_t field, const struct otlp_attr *a)
{
    size_t v = pb_begin(b, field);
    switch (a->type) {
    case OTLP_ATTR_STR:
        pb_string(b, 1, a->s, strlen(a->s));
        break;
    case OTLP_ATTR_BOOL:
        pb_tag(b, 2, 0);
        pb_varint(b, a->b ? 1 : 0);
        break;
    case OTLP_ATTR_INT:
        pb_tag(b, 3, 0);
        pb_varint(b, (uint64_t)a->i);   /* int64: two's complement, 10 bytes if negative */
        break;
    case OTLP_ATTR_DOUBLE:
        pb_double(b, 4, a->d);
        break;
    }
    pb_end(b, v);
}

/* KeyValue: key 1, value 2. */
void otlp_pb_attrs(struct otlp_buf *b, uint32_t field, const struct otlp_attr *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t kv = pb_begin(b, field);
        pb_string(b, 1, a[i].key, strlen(a[i].key));
        otlp_pb_anyvalue(b, 2, &a[i]);
        pb_end(b, kv);
    }
}

void otlp_json_attrs(struct otlp_buf *b, const struct otlp_attr *a, size_t n)
{
    otlp_buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        otlp_buf_puts(b, i ? ",{\"key\":" : "{\"key\":");
        otlp_json_str(b, a[i].key, strlen(a[i].key));
        otlp_buf_puts(b, ",\"value\":{");
        switch (a[i].type) {
        case OTLP_ATTR_STR:
            otlp_buf_puts(b, "\"stringValue\":");
            otlp_json_str(b, a[i].s, strlen(a[i].s));
            break;
        case OTLP_ATTR_BOOL:
            otlp_buf_puts(b, a[i].b ? "\"boolValue\":true" : "\"boolValue\":false");
            break;
        case OTLP_ATTR_INT:
            otlp_buf_puts(b, "\"intValue\":");
            otlp_json_i64str(b, a[i].i);
            break;
        case OTLP_ATTR_DOUBLE:
            otlp_buf_puts(b, "\"doubleValue\":");
            otlp_json_double(b, a[i].d);
            break;
        }
        otlp_buf_puts(b, "}}");
    }
    otlp_buf_puts(b, "]");
}

/* Request.resource_x 1 -> ResourceX{resource 1 -> Resource{attributes 1},
 * scope_x 2 -> ScopeX{scope 1 -> InstrumentationScope{name 1, version 2},
 * list 2}}: every signal numbers these the same. */
void otlp_pb_open(struct otlp_buf *b, const struct otlp_resource *res, size_t open[2])
{
    open[0] = pb_begin(b, 1);
    size_t r = pb_begin(b, 1);
    otlp_pb_attrs(b, 1, res->attrs, res->nattrs);
    pb_end(b, r);
    open[1] = pb_begin(b, 2);
    size_t s = pb_begin(b, 1);
    pb_string(b, 1, res->scope_name, strlen(res->scope_name));
    pb_string(b, 2, res->scope_version, strlen(res->scope_version));
    pb_end(b, s);
}

void otlp_pb_close(struct otlp_buf *b, const size_t open[2])
{
    pb_end(b, open[1]);
    pb_end(b, open[0]);
}

void otlp_json_open(struct otlp_buf *b, const struct otlp_resource *res,
                    const char *resource_x, const char *scope_x, const char *list)
{
    otlp_buf_printf(b, "{\"%s\":[{\"resource\":{\"attributes\":", resource_x);
    otlp_json_attrs(b, res->attrs, res->nattrs);
    otlp_buf_printf(b, "},\"%s\":[{\"scope\":{\"name\":", scope_x);
    otlp_json_str(b, res->scope_name, strlen(res->scope_name));
    otlp_buf_puts(b, ",\"version\":");
    otlp_json_str(b, res->scope_version, strlen(res->scope_version));
    otlp_buf_printf(b, "},\"%s\":[", list);
}

void otlp_json_close(struct otlp_buf *b)
{
    otlp_buf_puts(b, "]}]}]}");
}
