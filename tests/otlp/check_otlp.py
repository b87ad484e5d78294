#!/usr/bin/python3
"""check_otlp.py: strict decoding of the OTLP bodies a receiver saved.

Usage: check_otlp.py PROTOS WORKDIR FILE...
Each FILE is DIR/NNNN.SIGNAL with DIR/NNNN.SIGNAL.meta (receiver.py).  A
protobuf body must decode with `protoc --decode` of the official schema
(PROTOS: opentelemetry-proto's .proto files) with no unknown field (a
bare field number in protoc's output); a JSON body must parse with
json_format.Parse (unknown fields refused), trace and span ids being
lower-case hex of 16 and 8 bytes as OTLP/JSON says.  Prints one line per
record:
  resource KEY VALUE
  log SEVERITY_NUMBER SEVERITY_TEXT TIME_NS KIND BODY
  span NAME START_NS END_NS KIND
  metric NAME sum|gauge|histogram START_NS TIME_NS VALUE|COUNT SUM B1/B2 C1/C2
"""
import base64, glob, json, os, re, subprocess, sys

protos, work, files = sys.argv[1], sys.argv[2], sys.argv[3:]
SIG = {
    "metrics": ("opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
                "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"),
    "logs": ("opentelemetry/proto/collector/logs/v1/logs_service.proto",
             "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest"),
    "traces": ("opentelemetry/proto/collector/trace/v1/trace_service.proto",
               "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"),
}

gen = os.path.join(work, "pygen")
if not os.path.isdir(gen):
    os.makedirs(gen)
    all_protos = [os.path.relpath(p, protos) for p in
                  glob.glob(os.path.join(protos, "opentelemetry/proto/**/*.proto"), recursive=True)]
    subprocess.run(["protoc", "-I", protos, "--python_out", gen] + all_protos, check=True)
sys.path.insert(0, gen)
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
MSG = {"metrics": metrics_service_pb2.ExportMetricsServiceRequest,
       "logs": logs_service_pb2.ExportLogsServiceRequest,
       "traces": trace_service_pb2.ExportTraceServiceRequest}

def fail(why):
    print("check_otlp: " + why, file=sys.stderr)
    sys.exit(1)

def fix_ids(o, path):
    """OTLP/JSON ids are hex; the generic proto3 JSON mapping wants base64."""
    if isinstance(o, dict):
        for k, v in list(o.items()):
            if k in ("traceId", "spanId", "parentSpanId"):
                want = 32 if k == "traceId" else 16
                if not isinstance(v, str) or not re.fullmatch("[0-9a-f]{%d}" % want, v):
                    fail("%s: %s is not %d lower-case hex digits: %r" % (path, k, want, v))
                o[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                fix_ids(v, path)
    elif isinstance(o, list):
        for v in o:
            fix_ids(v, path)

def anyvalue(v):
    w = v.WhichOneof("value")
    return getattr(v, w) if w else None

for path in files:
    sig = path.rsplit(".", 1)[1]
    meta = dict(l.rstrip("\n").split("=", 1) for l in open(path + ".meta"))
    body = open(path, "rb").read()
    msg = MSG[sig]()
    if meta["content-type"] == "application/x-protobuf":
        proto, name = SIG[sig]
        r = subprocess.run(["protoc", "-I", protos, "--decode=" + name, proto],
                           input=body, capture_output=True)
        if r.returncode != 0:
            fail("%s: protoc --decode failed: %s" % (path, r.stderr.decode(errors="replace")))
        for line in r.stdout.decode(errors="replace").splitlines():
            if re.match(r"\s*[0-9]+[:{ ]", line):
                fail("%s: unknown field in protoc's output: %s" % (path, line.strip()))
        msg.ParseFromString(body)
    elif meta["content-type"] == "application/json":
        try:
            o = json.loads(body)
        except ValueError as e:
            fail("%s: not JSON: %s" % (path, e))
        fix_ids(o, path)
        try:
            json_format.Parse(json.dumps(o), msg)
        except json_format.ParseError as e:
            fail("%s: json_format.Parse: %s" % (path, e))
    else:
        fail("%s: Content-Type %r" % (path, meta["content-type"]))
    for k in ("authorization", "x-tenant"):
        if k in meta:
            print("header %s %s" % (k, meta[k]))
    rs = {"metrics": msg.resource_metrics if sig == "metrics" else None,
          "logs": msg.resource_logs if sig == "logs" else None,
          "traces": msg.resource_spans if sig == "traces" else None}[sig]
    for r in rs:
        for a in r.resource.attributes:
            print("resource %s %s" % (a.key, anyvalue(a.value)))
        scopes = {"metrics": "scope_metrics", "logs": "scope_logs", "traces": "scope_spans"}[sig]
        for sc in getattr(r, scopes):
            if sig == "logs":
                for l in sc.log_records:
                    kind = [anyvalue(a.value) for a in l.attributes if a.key == "eventlog.kind"]
                    print("log %d %s %d %s %s" % (l.severity_number, l.severity_text,
                          l.time_unix_nano, kind[0] if kind else "-", l.body.string_value))
            elif sig == "traces":
                for s in sc.spans:
                    if len(s.trace_id) != 16 or len(s.span_id) != 8:
                        fail("%s: id lengths %d/%d" % (path, len(s.trace_id), len(s.span_id)))
                    kind = [anyvalue(a.value) for a in s.attributes if a.key == "eventlog.kind"]
                    print("span %s %d %d %s" % (s.name, s.start_time_unix_nano,
                          s.end_time_unix_nano, kind[0] if kind else "-"))
            else:
                for m in sc.metrics:
                    w = m.WhichOneof("data")
                    if w == "sum":
                        if m.sum.aggregation_temporality != 2 or not m.sum.is_monotonic:
                            fail("%s: %s: not a cumulative monotonic sum" % (path, m.name))
                        for p in m.sum.data_points:
                            print("metric %s sum %d %d %s" % (m.name, p.start_time_unix_nano,
                                  p.time_unix_nano, p.as_int if p.HasField("as_int") else repr(p.as_double)))
                    elif w == "gauge":
                        for p in m.gauge.data_points:
                            print("metric %s gauge %d %d %s" % (m.name, p.start_time_unix_nano,
                                  p.time_unix_nano, p.as_int if p.HasField("as_int") else repr(p.as_double)))
                    elif w == "histogram":
                        if m.histogram.aggregation_temporality != 2:
                            fail("%s: %s: not cumulative" % (path, m.name))
                        for p in m.histogram.data_points:
                            print("metric %s histogram %d %d %d %s %s %s" % (m.name,
                                  p.start_time_unix_nano, p.time_unix_nano, p.count, repr(p.sum),
                                  "/".join(repr(b) for b in p.explicit_bounds),
                                  "/".join(str(c) for c in p.bucket_counts)))
                    else:
                        fail("%s: %s: data %r" % (path, m.name, w))
