"""The HTTP edge of every probe Mokka serves (/healthz, /readyz, /stagedz).

Stdlib ``socketserver`` in a daemon thread, answering HTTP/1.1 GET and HEAD
with keep-alive by a few line reads and one write: a route is a callable returning
(status, body); a str body is sent as text/plain (legible in ``kubectl
describe``), a dict as JSON. The facts behind each probe live with their
component (``mokka.agent.health``, ``mokka.nri.health``); this module only
serves them.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import threading
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from socketserver import StreamRequestHandler
from typing import Callable, Mapping, Union

Route = Callable[[], "tuple[int, Union[str, dict]]"]


def parse_addr(addr: str) -> tuple[str, int] | None:
    """``":8080"`` -> ("", 8080) (every interface); ``""`` -> None (probes off)."""
    if not addr:
        return None
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"invalid --health-addr {addr!r}: use HOST:PORT or :PORT")
    return host.strip("[]"), int(port)


class _IPv4Server(ThreadingHTTPServer):
    daemon_threads = True


class _DualStackServer(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True

    def server_bind(self) -> None:
        # ":PORT" means every interface, IPv4 included, as a Go listener does.
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def _encode(body) -> tuple[bytes, str]:
    if isinstance(body, dict):
        return (json.dumps(body, sort_keys=True) + "\n").encode(), "application/json"
    return (str(body) + "\n").encode(), "text/plain; charset=utf-8"


#: A request line or header line longer than this, or more header lines than
#: MAX_HEADERS, is refused: a probe request is a few short lines.
MAX_LINE = 8192
MAX_HEADERS = 100
#: A kept-alive connection idle this long is closed (the NRI plugin redials).
IDLE_TIMEOUT_S = 300.0


def _reply(status: int, body, close: bool, head_only: bool = False) -> bytes:
    data, content_type = _encode(body)
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}",
             f"Content-Length: {len(data)}"]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (b"" if head_only else data)


def _handler(routes: Mapping[str, Route]):
    known = ", ".join(sorted(routes))

    class Handler(StreamRequestHandler):
        """HTTP/1.1 with keep-alive, for GET and HEAD of a route and nothing more.

        The NRI plugin asks /stagedz before every container it adjusts, over one
        kept-alive connection, so a request costs a few line reads and one write;
        http.server's general request parsing cost more than the answer."""
        timeout = IDLE_TIMEOUT_S
        # With Nagle on, a reply after a kept-alive exchange can wait for the
        # client's delayed ACK (~40 ms).
        disable_nagle_algorithm = True

        def handle(self) -> None:
            try:
                while self._one():
                    pass
            except (OSError, ValueError):      # a peer gone, or idle past the timeout
                pass

        def _one(self) -> bool:
            """Answer one request; whether the connection stays open."""
            line = self.rfile.readline(MAX_LINE + 1)
            if not line:
                return False
            parts = line.split()
            if len(line) > MAX_LINE or len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
                self.wfile.write(_reply(400, "bad request line", close=True))
                return False
            method, target, version = parts
            close = version == b"HTTP/1.0"
            for _ in range(MAX_HEADERS):
                header = self.rfile.readline(MAX_LINE + 1)
                if header in (b"\r\n", b"\n", b""):
                    break
                if len(header) > MAX_LINE:
                    self.wfile.write(_reply(431, "header line too long", close=True))
                    return False
                name, _, value = header.partition(b":")
                name = name.strip().lower()
                if name == b"connection":
                    value = value.strip().lower()
                    close = value == b"close" or (close and value != b"keep-alive")
                elif name in (b"content-length", b"transfer-encoding") and value.strip() not in (b"", b"0"):
                    self.wfile.write(_reply(400, "a probe request has no body", close=True))
                    return False
            else:
                self.wfile.write(_reply(431, "too many header lines", close=True))
                return False
            if method not in (b"GET", b"HEAD"):
                self.wfile.write(_reply(405, "only GET and HEAD", close))
                return not close
            path = target.split(b"?", 1)[0].decode("latin-1")
            route = routes.get(path)
            status, body = route() if route else (404, f"no probe at {path}; try {known}")
            self.wfile.write(_reply(status, body, close, head_only=method == b"HEAD"))
            return not close

    return Handler


class ProbeServer:
    """Serves ``routes`` from a daemon thread until ``stop``."""

    def __init__(self, host: str, port: int, routes: Mapping[str, Route], name: str = "probes"):
        handler = _handler(routes)
        if host in ("", "::"):
            try:
                self._server: ThreadingHTTPServer = _DualStackServer(("::", port), handler)
            except OSError:            # no IPv6 in this network namespace
                self._server = _IPv4Server(("0.0.0.0", port), handler)
        elif ":" in host:
            self._server = _DualStackServer((host, port), handler)
        else:
            self._server = _IPv4Server((host, port), handler)
        # No poll interval: an idle agent must not wake up (serve_forever polls
        # for its shutdown flag); a pipe wakes the loop when it is time to stop.
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._server, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj == self._wake_r:
                        return
                    self._server._handle_request_noblock()   # accept, then a handler thread

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> "ProbeServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        os.write(self._wake_w, b"x")
        if self._thread.is_alive():
            self._thread.join(5)
        self._server.server_close()
        os.close(self._wake_r)
        os.close(self._wake_w)


def serve(addr: str, routes: Mapping[str, Route], name: str = "probes") -> ProbeServer | None:
    """Start serving on ``addr`` (--health-addr); None when it is empty (disabled)."""
    parsed = parse_addr(addr)
    if parsed is None:
        return None
    return ProbeServer(parsed[0], parsed[1], routes, name).start()
