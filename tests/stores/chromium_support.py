"""A headless Chromium driven over the DevTools protocol on a pipe (no network, no extra package).

``--remote-debugging-pipe`` makes Chromium read protocol commands from its
file descriptor 3 and write replies and events to its descriptor 4, each a
JSON object ended by a NUL byte: the standard library is the whole client.
:meth:`Browser.load` opens one file in a fresh tab of a throwaway profile with
the page's own Content-Security-Policy in force (nothing is injected into the
page: the measurement runs through ``Runtime.evaluate``), and gives back
every console message, every uncaught exception, every log entry (a CSP
violation, a failed load) and every request the page made, with what the
given expression measured after the load event.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

__all__ = ["Browser", "PageLoad", "chromium"]


def chromium() -> str | None:
    """The Chromium of this machine, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"):
        found = shutil.which(name)
        if found:
            return found
    return None


@attrs.frozen
class PageLoad:
    """What one page did in the browser."""

    url: str
    console: tuple[dict[str, Any], ...]
    exceptions: tuple[dict[str, Any], ...]
    log: tuple[dict[str, Any], ...]
    requests: tuple[str, ...]
    measured: Any

    def errors(self) -> list[str]:
        """Every console error or warning, uncaught exception and log entry, as text."""
        found = [f"console.{item.get('type')}: {item.get('args')}" for item in self.console
                 if item.get("type") in ("error", "warning", "assert")]
        found += [f"exception: {item.get('exceptionDetails')}" for item in self.exceptions]
        found += [f"log {item.get('level')}: {item.get('text')} {item.get('url', '')}"
                  for item in self.log]
        return found

    def other_requests(self) -> list[str]:
        """Every request the page made other than the page itself."""
        return [url for url in self.requests if url != self.url]


def _high_fd(fd: int) -> int:
    """``fd`` moved above the descriptors the child needs (3 and 4), close-on-exec."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class _Pipe:
    def __init__(self, to_browser: int, from_browser: int, timeout: float) -> None:
        self._out = to_browser
        self._in = from_browser
        self._buffer = b""
        self._next = 0
        self._timeout = timeout
        self._deadline = 0.0
        self.events: list[dict[str, Any]] = []

    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"Chromium did not answer within {self._timeout} s")
            ready, _, _ = select.select([self._in], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed its protocol pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        self._deadline = time.monotonic() + self._timeout
        self._next += 1
        ident = self._next
        command: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        data = json.dumps(command).encode() + b"\0"
        while data:
            data = data[os.write(self._out, data):]
        while True:
            message = self._read_message()
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_for(self, method: str, session: str) -> None:
        self._deadline = time.monotonic() + self._timeout
        while not any(event.get("method") == method and event.get("sessionId") == session
                      for event in self.events):
            self.events.append(self._read_message())


class Browser:
    """One headless Chromium with a throwaway profile; each :meth:`load` in a fresh tab.

    Every protocol call (and the wait for a page's load) has ``timeout``
    seconds; :meth:`close` waits 10 s for the browser, then kills its group.
    """

    def __init__(self, *, timeout: float = 60.0) -> None:
        browser = chromium()
        if browser is None:
            raise FileNotFoundError("no Chromium")
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_read, to_browser = os.pipe()
        from_browser, to_write = os.pipe()
        to_read, to_browser = _high_fd(to_read), _high_fd(to_browser)
        from_browser, to_write = _high_fd(from_browser), _high_fd(to_write)
        log = os.open(os.path.join(self._profile, "stderr.log"), os.O_WRONLY | os.O_CREAT, 0o600)
        argv = [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-extensions", "--disable-sync",
            "--disable-default-apps", "--mute-audio", "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}", "about:blank",
        ]
        self._pid = os.posix_spawn(
            browser, argv, {**os.environ, "HOME": self._profile},
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log, 1),
                (os.POSIX_SPAWN_DUP2, log, 2),
                (os.POSIX_SPAWN_DUP2, to_read, 3),
                (os.POSIX_SPAWN_DUP2, to_write, 4),
            ],
            setsid=True,
        )
        os.close(to_read)
        os.close(to_write)
        os.close(log)
        self._fds = (to_browser, from_browser)
        self._pipe = _Pipe(to_browser, from_browser, timeout)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, page: Path, expression: str, *, width: int = 1280, height: int = 900
             ) -> PageLoad:
        """Open ``page`` at ``width`` x ``height`` and evaluate ``expression`` after its load.

        ``expression`` is JavaScript whose value (JSON) is returned as
        ``measured``. Nothing is injected into the page: its own
        Content-Security-Policy stays in force.
        """
        pipe = self._pipe
        pipe.events.clear()
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            pipe.call(f"{domain}.enable", session=session)
        pipe.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        url = page.resolve().as_uri()
        pipe.call("Page.navigate", {"url": url}, session=session)
        pipe.wait_for("Page.loadEventFired", session)
        value = pipe.call("Runtime.evaluate",
                          {"expression": expression, "returnByValue": True}, session=session)
        if "exceptionDetails" in value:
            raise RuntimeError(f"the measurement failed: {value['exceptionDetails']}")
        # a last round trip, so that the events the load caused have arrived
        pipe.call("Runtime.evaluate", {"expression": "0"}, session=session)
        events = [event for event in pipe.events if event.get("sessionId") == session]
        pipe.call("Target.closeTarget", {"targetId": target})

        def params(method: str) -> list[dict[str, Any]]:
            return [event["params"] for event in events if event.get("method") == method]

        return PageLoad(
            url=url,
            console=tuple(params("Runtime.consoleAPICalled")),
            exceptions=tuple(params("Runtime.exceptionThrown")),
            log=tuple(item["entry"] for item in params("Log.entryAdded")),
            requests=tuple(item["request"]["url"] for item in params("Network.requestWillBeSent")),
            measured=value["result"].get("value"),
        )

    def close(self) -> None:
        """Close the browser (killed if it does not go) and remove its profile."""
        with contextlib.suppress(OSError, EOFError, TimeoutError, RuntimeError):
            self._pipe.call("Browser.close")
        for fd in self._fds:
            os.close(fd)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self._pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
        shutil.rmtree(self._profile, ignore_errors=True)
