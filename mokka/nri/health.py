"""The plugin's probes: /readyz (is injection happening) and /healthz (is a
handler wedged).

``Health`` holds the facts the driver reports (registered or not, handlers in
flight) and answers each probe as (status, body) from them and an injected
clock; ``ProbeServer`` is the thin stdlib HTTP edge on --health-addr.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from mokka.core import log
from mokka.nri.runtime_info import RuntimeInfo, wedge_threshold_s

GateReady = Callable[[], "tuple[bool, str]"]

_log = log.get("mokka.nri.health")


def _always_ready() -> tuple[bool, str]:
    return True, ""


class Health:
    def __init__(self, now: Callable[[], float] = time.monotonic,
                 gate_ready: GateReady = _always_ready) -> None:
        self._now = now
        self._gate_ready = gate_ready
        self._lock = threading.Lock()
        self._registered = False
        self._runtime: RuntimeInfo | None = None     # kept across reconnects
        self._tokens = itertools.count()
        self._in_flight: dict[int, float] = {}

    # --- Facts, reported by the driver -----------------------------------------

    def set_registered(self, runtime: RuntimeInfo) -> None:
        with self._lock:
            self._registered, self._runtime = True, runtime

    def clear_registered(self) -> None:
        with self._lock:
            self._registered = False

    @property
    def registered(self) -> bool:
        with self._lock:
            return self._registered

    def begin(self) -> int:
        """A CreateContainer is in flight from now; pass the token to ``end``."""
        with self._lock:
            token = next(self._tokens)
            self._in_flight[token] = self._now()
            return token

    def end(self, token: int) -> None:
        with self._lock:
            self._in_flight.pop(token, None)

    @contextlib.contextmanager
    def in_flight(self):
        token = self.begin()
        try:
            yield
        finally:
            self.end(token)

    # --- Probes ----------------------------------------------------------------

    def readyz(self) -> tuple[int, str]:
        if not self.registered:
            return 503, "not registered with the container runtime: containers are not injected"
        try:
            ok, reason = self._gate_ready()
        except Exception as exc:     # a broken check must fail the probe, not the server
            ok, reason = False, f"readiness check failed: {exc}"
        if not ok:
            return 503, reason or "not ready"
        return 200, "ok"

    def healthz(self) -> tuple[int, str]:
        with self._lock:
            oldest = min(self._in_flight.values(), default=None)
            threshold = wedge_threshold_s(self._runtime)
        if oldest is not None:
            age = self._now() - oldest
            if age > threshold:
                return 503, (f"a CreateContainer handler has been in flight for {age:.1f}s, "
                             f"longer than the {threshold:.1f}s threshold "
                             "(twice the runtime's request timeout)")
        return 200, "ok"


def parse_addr(addr: str) -> tuple[str, int] | None:
    """":8080" -> ("", 8080) (all interfaces); "" -> None (probes disabled)."""
    if not addr:
        return None
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"invalid --health-addr {addr!r}: use HOST:PORT or :PORT")
    return host.strip("[]"), int(port)


class _DualStackServer(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True

    def server_bind(self) -> None:
        # ":PORT" means every interface, IPv4 included, as Go's listener does.
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _IPv4Server(ThreadingHTTPServer):
    daemon_threads = True


def _make_handler(health: Health):
    routes = {"/readyz": health.readyz, "/healthz": health.healthz}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            probe = routes.get(self.path.split("?", 1)[0])
            status, body = probe() if probe else (404, "not found")
            data = (body + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt: str, *args) -> None:
            _log.debug("probe request", request=fmt % args)

    return Handler


class ProbeServer:
    """Serves Health's probes from a daemon thread until ``stop``."""

    def __init__(self, host: str, port: int, health: Health) -> None:
        handler = _make_handler(health)
        if host in ("", "::"):
            try:
                self._server: ThreadingHTTPServer = _DualStackServer(("::", port), handler)
            except OSError:            # no IPv6 in this network namespace
                self._server = _IPv4Server(("0.0.0.0", port), handler)
        elif ":" in host:
            self._server = _DualStackServer((host, port), handler)
        else:
            self._server = _IPv4Server((host, port), handler)
        # A short poll keeps shutdown (SIGTERM) prompt.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="nri-probes", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> "ProbeServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve(addr: str, health: Health) -> ProbeServer | None:
    """Start the probe server on --health-addr; None when it is disabled."""
    parsed = parse_addr(addr)
    if parsed is None:
        return None
    return ProbeServer(parsed[0], parsed[1], health).start()
