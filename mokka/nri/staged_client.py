"""``GET /stagedz`` over one kept-alive connection, under one total deadline.

The staging gate asks the node agent before every adjustment, so this sits on
the CreateContainer path. A fresh TCP connection per request cost ~0.6 ms, and
``http.client`` on a kept one still ~130 us of CPU per request (its header
parsing goes through the email package): more than the rest of the request.
So the request is written as prebuilt bytes and the reply read by hand: the
status line, the headers this needs (Content-Length, Transfer-Encoding,
Connection) and at most ``BODY_LIMIT`` bytes of body. Every blocking call
shares one deadline — a per-operation timeout would let an agent that trickles
a byte at a time stretch it — and a kept connection that went stale (the agent
restarted) is redialled once. No proxies (a pod-local URL must never go
through HTTP_PROXY), no redirects.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse

#: How much of a failure body is kept (it ends up in /readyz, so it stays short).
BODY_LIMIT = 200
#: A status line and headers longer than this are not an agent's.
HEAD_LIMIT = 16384
_READ = 4096


class StagedError(Exception):
    """The agent could not be asked (unreachable, deadline, protocol error)."""


class StagedClient:
    def __init__(self, url: str, timeout_s: float):
        self.url = url
        self._timeout_s = timeout_s
        parts = urllib.parse.urlsplit(url)
        self._error = None
        if parts.scheme != "http" or not parts.hostname:
            self._error = f"unsupported URL {url!r}: use http://HOST:PORT/stagedz"
        self._host = parts.hostname or ""
        try:
            self._port = parts.port or 80
        except ValueError:
            self._port, self._error = 0, f"invalid port in {url!r}"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = parts.netloc.rpartition("@")[2]
        self._request = (f"GET {target} HTTP/1.1\r\nHost: {host}\r\n"
                         "Accept: application/json\r\n\r\n").encode("latin-1", "replace")
        self._sock: socket.socket | None = None
        self._mu = threading.Lock()

    def get(self) -> tuple[int, str]:
        """(status, the first BODY_LIMIT bytes of the body) or StagedError."""
        if self._error:
            raise StagedError(self._error)
        with self._mu:
            deadline = time.monotonic() + self._timeout_s
            for attempt in (1, 2):
                reused = self._sock is not None
                try:
                    if self._sock is None:
                        self._sock = self._dial(deadline)
                    _arm(self._sock, deadline)
                    self._sock.sendall(self._request)
                    status, body, keep = _Reply(self._sock, deadline).read()
                    if not keep:
                        self._close()             # closing, or a body we did not drain
                    return status, body.decode("utf-8", "replace").strip()
                except (OSError, ValueError) as exc:
                    self._close()
                    if reused and attempt == 1 and time.monotonic() < deadline:
                        continue                  # a stale kept-alive connection: redial once
                    raise StagedError(str(exc) or type(exc).__name__) from None
        raise StagedError("unreachable")          # not reached

    def _dial(self, deadline: float) -> socket.socket:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline exceeded")
        sock = socket.create_connection((self._host, self._port), remaining)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def close(self) -> None:
        with self._mu:
            self._close()


def _arm(sock: socket.socket, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline exceeded")
    sock.settimeout(remaining)


class _Reply:
    """One HTTP/1.x response off ``sock``: (status, body head, connection reusable)."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline
        self._buf = b""

    def _more(self) -> None:
        _arm(self._sock, self._deadline)
        data = self._sock.recv(_READ)
        if not data:
            raise ConnectionError("connection closed by the agent")
        self._buf += data

    def _line(self) -> bytes:
        while (end := self._buf.find(b"\r\n")) < 0:
            if len(self._buf) > HEAD_LIMIT:
                raise ValueError("response line too long")
            self._more()
        line, self._buf = self._buf[:end], self._buf[end + 2:]
        return line

    def read(self) -> tuple[int, bytes, bool]:
        while (end := self._buf.find(b"\r\n\r\n")) < 0:
            if len(self._buf) > HEAD_LIMIT:
                raise ValueError("response headers too long")
            self._more()
        head, self._buf = self._buf[:end], self._buf[end + 4:]
        status_line, *lines = head.split(b"\r\n")
        version, _, rest = status_line.partition(b" ")
        code = rest[:3]
        if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ValueError(f"malformed status line {status_line[:80]!r}")
        status = int(code)
        headers = {}
        for line in lines:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip().lower()
        keep = version == b"HTTP/1.1" and headers.get(b"connection") != b"close"
        if status < 200 or status in (204, 304):
            return status, b"", keep
        if b"chunked" in headers.get(b"transfer-encoding", b""):
            return status, self._chunked(), False
        length = headers.get(b"content-length")
        if length is None or not length.isdigit():
            return status, self._until_closed(), False
        want = int(length)
        while len(self._buf) < min(want, BODY_LIMIT):
            self._more()
        # Drained: the connection stays usable; else it is closed after this.
        return status, self._buf[:min(want, BODY_LIMIT)], keep and want <= BODY_LIMIT \
            and len(self._buf) == want

    def _until_closed(self) -> bytes:
        try:
            while len(self._buf) < BODY_LIMIT:
                self._more()
        except ConnectionError:
            pass
        return self._buf[:BODY_LIMIT]

    def _chunked(self) -> bytes:
        body = b""
        while len(body) < BODY_LIMIT:
            size = int(self._line().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                break
            while len(self._buf) < size + 2:
                self._more()
            body, self._buf = body + self._buf[:size], self._buf[size + 2:]
        return body[:BODY_LIMIT]
