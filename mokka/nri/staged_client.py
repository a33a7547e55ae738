"""``GET /stagedz`` over one kept-alive connection, under one total deadline.

The staging gate asks the node agent before every adjustment, so this sits on
the CreateContainer path: a fresh TCP connection per request (and a thread per
connection in the agent's server) cost ~0.6 ms; a reused HTTP/1.1 connection a
fraction of that. Every blocking call shares one deadline — a per-operation
timeout would let an agent that trickles a byte at a time stretch it — and a
kept connection that went stale (the agent restarted) is redialled once.
No proxies (a pod-local URL must never go through HTTP_PROXY), no redirects.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.parse

#: How much of a failure body is kept (it ends up in /readyz, so it stays short).
BODY_LIMIT = 200


class StagedError(Exception):
    """The agent could not be asked (unreachable, deadline, protocol error)."""


class _DeadlineSocket(socket.socket):
    deadline = 0.0

    def _arm(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline exceeded")
        self.settimeout(remaining)

    def recv_into(self, *args, **kwargs):
        self._arm()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args, **kwargs):
        self._arm()
        return super().recv(*args, **kwargs)

    def sendall(self, *args, **kwargs):
        self._arm()
        return super().sendall(*args, **kwargs)


class _Connection(http.client.HTTPConnection):
    deadline = 0.0

    def connect(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline exceeded")
        raw = socket.create_connection((self.host, self.port), remaining)
        sock = _DeadlineSocket(raw.family, raw.type, raw.proto, fileno=raw.detach())
        sock.deadline = self.deadline
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock


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
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._conn: _Connection | None = None
        self._mu = threading.Lock()

    def get(self) -> tuple[int, str]:
        """(status, the first BODY_LIMIT bytes of the body) or StagedError."""
        if self._error:
            raise StagedError(self._error)
        with self._mu:
            deadline = time.monotonic() + self._timeout_s
            for attempt in (1, 2):
                reused = self._conn is not None
                if self._conn is None:
                    self._conn = _Connection(self._host, self._port)
                conn = self._conn
                conn.deadline = deadline
                if conn.sock is not None:
                    conn.sock.deadline = deadline
                try:
                    conn.request("GET", self._target, headers={"Accept": "application/json"})
                    response = conn.getresponse()
                    body = response.read(BODY_LIMIT)
                    if response.will_close or not response.isclosed():
                        self._close()             # closing, or a body we did not drain
                    return response.status, body.decode("utf-8", "replace").strip()
                except (OSError, http.client.HTTPException) as exc:
                    self._close()
                    if reused and attempt == 1 and time.monotonic() < deadline:
                        continue                  # a stale kept-alive connection: redial once
                    raise StagedError(str(exc) or type(exc).__name__) from None
        raise StagedError("unreachable")          # not reached

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._mu:
            self._close()
