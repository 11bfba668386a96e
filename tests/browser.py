"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no websocket, no driver, no extra package.  Enough for the report's tests: open a page at a given
width, run JavaScript in it, collect console errors and exceptions, take a screenshot.

    with Browser(path) as b:
        page = b.open(url, width=1280)
        page.evaluate("document.title")
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, path: str, timeout: float = 60.0):
        self.path, self.timeout = path, timeout
        self._id = 0
        self._buffer = b""
        self.events: list[dict] = []

    def __enter__(self):
        self._profile = tempfile.mkdtemp(prefix="autopdp-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds():  # the protocol's pipe is fd 3 (commands in) and fd 4 (replies out) in the child
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [self.path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-quic",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             "--disable-extensions", "--mute-audio", f"--user-data-dir={self._profile}", "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False,  # fds 3 and 4 are made in the child, after the fork
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        return self

    def __exit__(self, *exc):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- protocol
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no reply from Chromium")
            if not select.select([self._from_chrome], [], [], max(0.0, deadline - time.monotonic()))[0]:
                continue  # nothing within the deadline: raised above
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = memoryview(json.dumps(msg).encode() + b"\0")
        while data:  # a pipe's write(2) may take only part of a message
            data = data[os.write(self._to_chrome, data):]
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str | None = None) -> dict:
        for i, e in enumerate(self.events):
            if e.get("method") == method and (session is None or e.get("sessionId") == session):
                return self.events.pop(i)
        deadline = time.monotonic() + self.timeout
        while True:
            e = self._read_message(deadline)
            if e.get("method") == method and (session is None or e.get("sessionId") == session):
                return e
            self.events.append(e)

    def open(self, url: str, width: int = 1280, height: int = 900) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        page.resize(width, height)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return page


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def resize(self, width: int, height: int = 900) -> None:
        self.browser.send("Emulation.setDeviceMetricsOverride",
                          {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                          session=self.session)

    def evaluate(self, expression: str):
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"JavaScript error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, full_page: bool = False) -> bytes:
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        return base64.b64decode(self.browser.send("Page.captureScreenshot", params, session=self.session)["data"])

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries of this page so far."""
        out = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args", []))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", "")[:500])
        return out
