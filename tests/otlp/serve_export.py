#!/usr/bin/python3
"""serve_export.py: what `serve --otlp-*` sent, read back from the bodies a
receiver saved (tests/otlp/receiver.py), for tests/otlp/test_otlp_serve.sh.
check_otlp.py has already checked each body strictly against the schema;
this reads them with the same generated modules (WORKDIR/pygen).

Usage:
  serve_export.py WORKDIR DIR last-metrics PID PROM METRICS_C
      The last metrics request of process.pid PID against PROM (the
      program's /p/PID/metrics scraped after it ended): every series of
      every family the name table (METRICS_C: tools/otlp/metrics.c)
      names, with its labels as attributes, holds the same value (a
      histogram: the same count, sum and buckets), and the request holds
      nothing else but the exporter's own series.  Prints the OTLP names
      of the request, one a line, into stdout.
  serve_export.py WORKDIR DIR summary PID
      Lines "log KIND TIME BODY" and "span NAME START END KIND" of PID's
      logs and spans, and "metric NAME ATTRS VALUE" of its last metrics
      request.
"""
import glob, math, os, re, sys

work, d, cmd = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(work, "pygen"))
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
import base64, json

MSG = {"metrics": metrics_service_pb2.ExportMetricsServiceRequest,
       "logs": logs_service_pb2.ExportLogsServiceRequest,
       "traces": trace_service_pb2.ExportTraceServiceRequest}


def fail(why):
    print("serve_export: " + why, file=sys.stderr)
    sys.exit(1)


def fix_ids(o):
    if isinstance(o, dict):
        for k, v in list(o.items()):
            if k in ("traceId", "spanId", "parentSpanId"):
                o[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                fix_ids(v)
    elif isinstance(o, list):
        for v in o:
            fix_ids(v)


def anyvalue(v):
    w = v.WhichOneof("value")
    return getattr(v, w) if w else None


def requests(sig):
    """(number, resource attributes, request) of every request of sig, in order."""
    out = []
    for path in sorted(glob.glob(os.path.join(d, "[0-9]*." + sig))):
        meta = dict(l.rstrip("\n").split("=", 1) for l in open(path + ".meta"))
        body = open(path, "rb").read()
        msg = MSG[sig]()
        if meta["content-type"] == "application/json":
            o = json.loads(body)
            fix_ids(o)
            json_format.Parse(json.dumps(o), msg)
        else:
            msg.ParseFromString(body)
        rl = getattr(msg, {"metrics": "resource_metrics", "logs": "resource_logs",
                           "traces": "resource_spans"}[sig])
        for r in rl:
            attrs = {a.key: anyvalue(a.value) for a in r.resource.attributes}
            out.append((int(os.path.basename(path).split(".")[0]), attrs, r))
    return out


def last_metrics(pid):
    got = [r for r in requests("metrics") if r[1].get("process.pid") == pid]
    if not got:
        fail("no metrics request with process.pid %d" % pid)
    return got[-1]


def points(r):
    """{(name, frozenset(attrs)): value or (count, sum, bounds, counts)}"""
    out = {}
    for sc in r.scope_metrics:
        for m in sc.metrics:
            w = m.WhichOneof("data")
            for p in getattr(m, w).data_points:
                key = (m.name, frozenset((a.key, anyvalue(a.value)) for a in p.attributes))
                if key in out:
                    fail("%s %s twice in one request" % key)
                if w == "histogram":
                    out[key] = (p.count, p.sum, list(p.explicit_bounds), list(p.bucket_counts))
                else:
                    out[key] = p.as_int if p.HasField("as_int") else p.as_double
    return out


def unescape(v):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def prom(path):
    """{(family, suffix, frozenset(labels minus program, pid)): value}"""
    out = {}
    types = {}
    lab = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("# TYPE "):
            _, _, n, t = line.split(" ", 3)
            types[n] = t
            continue
        if not line or line.startswith("#"):
            continue
        name, rest = line.split("{", 1)
        labels, value = rest.rsplit("} ", 1)
        ls = {k: unescape(v) for k, v in lab.findall(labels)}
        ls.pop("program", None)
        ls.pop("pid", None)
        fam, suffix = name, ""
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf) and types.get(name[:-len(suf)]) == "histogram":
                fam, suffix = name[:-len(suf)], suf
        out[(fam, suffix, frozenset(ls.items()))] = float(value)
    return out, types


if cmd == "last-metrics":
    pid, prom_path, metrics_c = int(sys.argv[4]), sys.argv[5], sys.argv[6]
    table = {}
    for m in re.finditer(r'\{ "([a-z_]+)", "([a-z._]+)", "([^"]*)", (OTLP_[A-Z]+),',
                         open(metrics_c).read()):
        table[m.group(1)] = (m.group(2), m.group(4))
    if len(table) < 20:
        fail("read only %d names from %s" % (len(table), metrics_c))
    n, attrs, r = last_metrics(pid)
    pts = points(r)
    want, types = prom(prom_path)
    seen = set()
    checked = 0
    for (fam, suffix, ls), v in want.items():
        if fam not in table:
            fail("/metrics family %s has no OTLP name in the table" % fam)
        otel, kind = table[fam]
        if suffix == "_bucket":
            continue
        ls_key = frozenset((k, v2) for k, v2 in ls if k != "le")
        key = (otel, ls_key)
        if key not in pts:
            fail("request %d: no point %s %s (%s = %r in /metrics)" % (n, otel, dict(ls_key), fam + suffix, v))
        seen.add(key)
        got = pts[key]
        if kind == "OTLP_HISTOGRAM":
            count, s, bounds, counts = got
            if suffix == "_sum" and not math.isclose(s, v, rel_tol=1e-12, abs_tol=1e-15):
                fail("%s sum: export %r, /metrics %r" % (otel, s, v))
            if suffix == "_count" and count != v:
                fail("%s count: export %r, /metrics %r" % (otel, count, v))
            if suffix == "_count":
                cum = 0
                for b, c in zip(bounds + [math.inf], counts):
                    cum += c
                    le = "+Inf" if b == math.inf else "%g" % b
                    bk = (fam, "_bucket", frozenset(list(ls_key) + [("le", le)]))
                    if want.get(bk) != cum:
                        fail("%s bucket le=%s: export %d cumulative, /metrics %r" % (otel, le, cum, want.get(bk)))
        else:
            if not math.isclose(float(got), v, rel_tol=1e-12, abs_tol=1e-12):
                fail("%s %s: export %r, /metrics %r" % (otel, dict(ls_key), got, v))
        checked += 1
    extra = [k for k in pts if k not in seen and not k[0].startswith("eventlog.otlp.")]
    if extra:
        fail("request %d has points /metrics has not: %s" % (n, extra[:5]))
    for name in sorted({k[0] for k in pts}):
        print(name)
    print("checked %d points of request %d against /metrics" % (checked, n), file=sys.stderr)
elif cmd == "summary":
    pid = int(sys.argv[4])
    for n, attrs, r in requests("logs"):
        if attrs.get("process.pid") != pid:
            continue
        for sc in r.scope_logs:
            for l in sc.log_records:
                kind = [anyvalue(a.value) for a in l.attributes if a.key == "eventlog.kind"]
                print("log %s %d %s" % (kind[0] if kind else "-", l.time_unix_nano, l.body.string_value))
    for n, attrs, r in requests("traces"):
        if attrs.get("process.pid") != pid:
            continue
        for sc in r.scope_spans:
            for s in sc.spans:
                kind = [anyvalue(a.value) for a in s.attributes if a.key == "eventlog.kind"]
                print("span %s %d %d %s" % (s.name, s.start_time_unix_nano, s.end_time_unix_nano,
                                            kind[0] if kind else "-"))
    n, attrs, r = last_metrics(pid)
    for k, v in sorted(points(r).items(), key=lambda kv: repr(kv[0])):
        a = ",".join("%s=%s" % kv for kv in sorted(k[1]))
        print("metric %s %s %s" % (k[0], a or "-", v if not isinstance(v, tuple) else "%d/%r" % (v[0], v[1])))
    for k in ("service.name", "process.pid", "process.executable.name", "host.name"):
        print("resource %s %s" % (k, attrs.get(k)))
else:
    fail("unknown command " + cmd)
