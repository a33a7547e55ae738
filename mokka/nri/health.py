"""The plugin's probes: /readyz (is injection happening) and /healthz (is a
handler wedged).

``Health`` holds the facts the driver reports (registered or not, handlers in
flight) and answers each probe as (status, body) from them and an injected
clock; ``ProbeServer`` is the thin stdlib HTTP edge on --health-addr.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from typing import Callable

from mokka.core import probes
from mokka.nri.runtime_info import RuntimeInfo, wedge_threshold_s

GateReady = Callable[[], "tuple[bool, str]"]



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


def routes(health: Health) -> dict:
    return {"/readyz": health.readyz, "/healthz": health.healthz}


class ProbeServer(probes.ProbeServer):
    """The plugin's probes on HOST:PORT."""

    def __init__(self, host: str, port: int, health: Health) -> None:
        super().__init__(host, port, routes(health), name="nri-probes")


def serve(addr: str, health: Health) -> probes.ProbeServer | None:
    """Start the probe server on --health-addr; None when it is disabled."""
    return probes.serve(addr, routes(health), name="nri-probes")
