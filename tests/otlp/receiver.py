#!/usr/bin/python3
"""receiver.py: an OTLP/HTTP receiver on loopback for tests/otlp/test_otlp.sh.

Usage: receiver.py DIR MODE
Writes its port to DIR/port, and each request body to DIR/NNNN.SIGNAL
(SIGNAL from the path /v1/SIGNAL) with its Content-Type and headers in
DIR/NNNN.SIGNAL.meta.  MODE:
  ok        answer 200 with an empty body
  retry     answer the first request of each body 503 with Retry-After: 1,
            the same body again 200 (so each body must arrive twice, once
            refused and once taken)
  partial   answer 200 with a partial_success body saying 3 rejected
  hang      read the request and never answer
Every request is logged to DIR/log as "NNNN SIGNAL STATUS SHA256".
"""
import hashlib, http.server, os, socketserver, sys, threading, time

d, mode = sys.argv[1], sys.argv[2]
lock = threading.Lock()
count = [0]
seen = set()

def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7f) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        sig = self.path.rsplit("/", 1)[-1]
        digest = hashlib.sha256(body).hexdigest()
        with lock:
            count[0] += 1
            k = count[0]
            first = digest not in seen
            seen.add(digest)
        if mode == "hang":
            with open(os.path.join(d, "log"), "a") as f:
                f.write("%04d %s hang %s\n" % (k, sig, digest))
            time.sleep(3600)
            return
        name = os.path.join(d, "%04d.%s" % (k, sig))
        with open(name, "wb") as f:
            f.write(body)
        with open(name + ".meta", "w") as f:
            f.write("content-type=%s\n" % self.headers.get("Content-Type"))
            for h in ("Authorization", "X-Tenant"):
                if self.headers.get(h) is not None:
                    f.write("%s=%s\n" % (h.lower(), self.headers.get(h)))
        status, extra, out = 200, [], b""
        if mode == "retry" and first:
            status, extra = 503, [("Retry-After", "1")]
        elif mode == "partial":
            msg = b"3 refused by the test"
            inner = b"\x08" + varint(3) + b"\x12" + varint(len(msg)) + msg
            if "json" in (self.headers.get("Content-Type") or ""):
                out = b'{"partialSuccess":{"rejectedLogRecords":"3","errorMessage":"3 refused by the test"}}'
            else:
                out = b"\x0a" + varint(len(inner)) + inner
        with open(os.path.join(d, "log"), "a") as f:
            f.write("%04d %s %d %s\n" % (k, sig, status, digest))
        self.send_response(status)
        for h, v in extra:
            self.send_header(h, v)
        self.send_header("Content-Type", self.headers.get("Content-Type") or "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

srv = S(("127.0.0.1", 0), H)
with open(os.path.join(d, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
srv.serve_forever()
