"""The HTTP edge of every probe Mokka serves (/healthz, /readyz, /stagedz).

Stdlib ``http.server`` in a daemon thread: a route is a callable returning
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


def _handler(routes: Mapping[str, Route]):
    known = ", ".join(sorted(routes))

    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1 keeps a connection open: the NRI plugin asks /stagedz before
        # every container it adjusts, and a new connection each time costs more
        # than the answer. Every response carries Content-Length, as 1.1 needs.
        protocol_version = "HTTP/1.1"
        # Headers and body go out as two writes; with Nagle on, the second waits
        # for the client's delayed ACK (~40 ms) on a kept-alive connection.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            route = routes.get(self.path.split("?", 1)[0])
            status, body = route() if route else (404, f"no probe at {self.path}; try {known}")
            data, content_type = _encode(body)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt: str, *args) -> None:
            pass        # kubelet probes every few seconds: not worth a log line each

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
