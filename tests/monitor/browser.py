#!/usr/bin/env python3
"""browser.py: drive headless Chromium for tests/monitor/test_serve.sh.

Usage: browser.py CHROMIUM URL READY_JS VALUES_JS SCREENSHOT [SECS]

Opens URL in a headless Chromium spoken to over the DevTools protocol on
a pipe (--remote-debugging-pipe: JSON messages ending in NUL on fds 3 and
4, no network port), waits until the JavaScript expression READY_JS is
true in the page (at most SECS seconds, default 60: a hang guard), then
prints the JSON value of VALUES_JS (what the page shows, read from its
DOM) and saves a PNG screenshot (of the region ELS_SHOT_CLIP="X,Y,W,H"
if set).  Exit 1 with a message if the page never
became ready or the browser failed.  It checks nothing itself: the test
compares the values.

With ELS_BROWSER_STEPS=FILE (a JSON list of {"click": CSS selector,
"wait": JS, "read": JS}), after READY_JS each step clicks the element
with the mouse (DevTools input events at its centre, as a user would:
a hidden or covered button is not clicked), waits until "wait" is true
and evaluates "read"; the output is then {"steps": [each read],
"values": VALUES_JS's value}.
"""
import base64, json, os, subprocess, sys, tempfile, time


def main():
    chromium, url, ready_js, values_js, shot = sys.argv[1:6]
    secs = float(sys.argv[6]) if len(sys.argv) > 6 else 60.0
    # Above fd 4, so that placing them on 3 and 4 in the child cannot
    # overwrite one with the other.
    import fcntl
    def high(fd):
        h = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return h
    to_chrome_r, to_chrome_w = map(high, os.pipe())
    from_chrome_r, from_chrome_w = map(high, os.pipe())
    profile = tempfile.mkdtemp(prefix="els-chromium-")
    log = open(os.environ.get("ELS_BROWSER_LOG", os.devnull), "ab")
    # Chromium reads commands on fd 3 and writes replies on fd 4.
    def child_fds():
        os.dup2(to_chrome_r, 3)
        os.dup2(from_chrome_w, 4)
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
         "--user-data-dir=" + profile, "--remote-debugging-pipe",
         "--window-size=1280,1000", "about:blank"],
        preexec_fn=child_fds, close_fds=False,
        stdout=subprocess.DEVNULL, stderr=log)
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    out = os.fdopen(to_chrome_w, "wb", buffering=0)
    inp = os.fdopen(from_chrome_r, "rb", buffering=0)
    pending = b""
    next_id = [0]

    def send(method, params=None, session=None):
        next_id[0] += 1
        msg = {"id": next_id[0], "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        out.write(json.dumps(msg).encode() + b"\0")
        return next_id[0]

    def call(method, params=None, session=None):
        nonlocal pending
        want = send(method, params, session)
        while True:
            while b"\0" not in pending:
                chunk = inp.read(65536)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                pending += chunk
            raw, pending = pending.split(b"\0", 1)
            msg = json.loads(raw)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg["result"]

    def evaluate(session, expr):
        r = call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
        if "exceptionDetails" in r:
            return None
        return r["result"].get("value")

    try:
        target = call("Target.createTarget", {"url": url})["targetId"]
        session = call("Target.attachToTarget",
                       {"targetId": target, "flatten": True})["sessionId"]
        call("Runtime.enable", {}, session)
        deadline = time.time() + secs
        while not evaluate(session, ready_js):
            if time.time() > deadline:
                print("browser.py: page not ready after %.0f s (%s)" % (secs, ready_js),
                      file=sys.stderr)
                return 1
            time.sleep(0.2)
        def wait_for(expr, what):
            while not evaluate(session, expr):
                if time.time() > deadline:
                    raise RuntimeError("%s: not true after %.0f s: %s" % (what, secs, expr))
                time.sleep(0.1)

        steps_file = os.environ.get("ELS_BROWSER_STEPS")
        reads = []
        for step in (json.load(open(steps_file)) if steps_file else []):
            sel = json.dumps(step["click"])
            box = evaluate(session, "(() => { const e = document.querySelector(%s);"
                           " if (!e) return null; e.scrollIntoView({block: 'center'});"
                           " const r = e.getBoundingClientRect();"
                           " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % sel)
            if not box:
                raise RuntimeError("no element %s to click" % step["click"])
            for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
                call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                  "button": "left", "clickCount": 1}, session)
            wait_for(step["wait"], "after clicking " + step["click"])
            reads.append(evaluate(session, step.get("read", "null")))
        values = evaluate(session, values_js)
        if steps_file:
            values = {"steps": reads, "values": values}
        shot_params = {"format": "png"}
        clip = os.environ.get("ELS_SHOT_CLIP")   # "X,Y,W,H" in CSS pixels
        if clip:
            x, y, w, h = (float(v) for v in clip.split(","))
            shot_params["clip"] = {"x": x, "y": y, "width": w, "height": h, "scale": 1}
        png = call("Page.captureScreenshot", shot_params, session)["data"]
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png))
        print(json.dumps(values))
        return 0
    except RuntimeError as e:
        print("browser.py: %s" % e, file=sys.stderr)
        return 1
    finally:
        try:
            send("Browser.close")
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        subprocess.call(["rm", "-rf", profile])


if __name__ == "__main__":
    sys.exit(main())
