# Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe): no
# websocket library, no npm package, only Debian's `chromium` and Python's standard library.
import base64
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import zlib


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One page in a headless Chromium; every console error and uncaught exception is kept."""

    def __init__(self, width=1200, height=900):
        binary = find_chromium()
        if not binary:
            raise RuntimeError("chromium is not installed (make test installs Debian's chromium)")
        self.profile = tempfile.mkdtemp(prefix="anatomy_chromium_")
        # Chromium reads commands from fd 3 and writes replies to fd 4.
        to_chromium_r, self.to_chromium = os.pipe()
        self.from_chromium, from_chromium_w = os.pipe()

        def wire():  # in the child: the pipe ends onto fds 3 and 4, whatever numbers they had
            read_end, write_end = os.dup(to_chromium_r), os.dup(from_chromium_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        # close_fds=False: fds 3 and 4 are made after the point where Popen would close the
        # others; every other fd of this process is close-on-exec already (PEP 446).
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--user-data-dir=" + self.profile, f"--window-size={width},{height}"],
            close_fds=False, preexec_fn=wire, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chromium_r)
        os.close(from_chromium_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None
        self.events = []
        self.errors = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _read_message(self, timeout=60):
        while b"\0" not in self.buffer:
            ready, _, _ = select.select([self.from_chromium], [], [], timeout)
            if not ready:
                raise RuntimeError(f"chromium sent nothing for {timeout} s")
            chunk = os.read(self.from_chromium, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def _note(self, message):
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"uncaught exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console." + params["type"] + ": " +
                               " ".join(str(a.get("value", a.get("description")))
                                        for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append("log: " + params["entry"].get("text", ""))
        self.events.append(message)

    def call(self, method, params=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_chromium, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._note(reply)

    def open(self, path):
        self.events.clear()
        self.call("Page.navigate", {"url": "file://" + os.path.abspath(path)})
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self._note(self._read_message())

    def js(self, expression):
        """The value of a JavaScript expression in the page (JSON-serializable)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def mouse(self, kind, x, y, clicks=1):
        """A real mouse event at page coordinates: 'move', 'click' or 'double'."""
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        if kind == "move":
            return
        for count in range(1, (2 if kind == "double" else 1) + 1):
            for phase in ("mousePressed", "mouseReleased"):
                self.call("Input.dispatchMouseEvent", {"type": phase, "x": x, "y": y,
                                                       "button": "left", "clickCount": count})

    def centre(self, selector):
        """The centre of the first element matching selector, in page coordinates."""
        box = self.js(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                      ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        return box[0], box[1]

    def resize(self, width, height):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def screenshot(self, fast=False):
        """The page as a PNG. fast: encoded for speed (every row filtered 'Up', which png_pixels
        decodes at once), for checks that read it rather than files that keep it."""
        return base64.b64decode(self.call("Page.captureScreenshot",
                                          {"format": "png", "optimizeForSpeed": fast})["data"])

    def close(self):
        try:
            self.call("Browser.close")
        except RuntimeError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def add_bytes(x, y):
    """x + y byte by byte, modulo 256, as one addition of two big integers: the low 7 bits of
    each byte add without reaching the next byte, and the top bit is the XOR of the three."""
    n = len(x)
    low, top = int.from_bytes(b"\x7f" * n, "big"), int.from_bytes(b"\x80" * n, "big")
    a, b = int.from_bytes(x, "big"), int.from_bytes(y, "big")
    return bytearray((((a & low) + (b & low)) ^ ((a ^ b) & top)).to_bytes(n, "big"))


def dark_pixels(channels, rows, threshold=200):
    """How many pixels have a colour channel below threshold (of 255): a byte map marks the dark
    bytes, and a pixel is dark where any of its R, G, B bytes is marked."""
    dark = bytes(1 if v < threshold else 0 for v in range(256))
    count = 0
    for row in rows:
        marked = row.translate(dark)
        count += bin(int.from_bytes(marked[0::channels], "big") |
                     int.from_bytes(marked[1::channels], "big") |
                     int.from_bytes(marked[2::channels], "big")).count("1")
    return count


def png_pixels(png):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, as Chromium writes."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, width = 8, b"", 0
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        body = png[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"PNG depth {depth} colour type {colour}"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 2:  # Up: the whole row at once
            line = add_bytes(line, previous)
        elif kind != 0:  # Sub, Average, Paeth: byte by byte, each needs the one before
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                if kind == 1:
                    line[i] = (line[i] + a) & 255
                elif kind == 3:
                    line[i] = (line[i] + (a + b) // 2) & 255
                elif kind == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows
