"""The plugin's probes: /readyz (is injection happening), /healthz (is a
handler wedged) and /metrics (how much work, how much overload).

``Health`` holds the facts the driver reports (registered or not, handlers
running, counters) and answers each probe as (status, body) from them and an
injected clock; ``ProbeServer`` is the thin stdlib HTTP edge on --health-addr.

Liveness means "making progress": only a handler that is *running* ages
towards the /healthz threshold. Requests waiting for a worker, or replies
waiting for a runtime that does not read them, are load, not a wedge: a
restart would not help them, and a burst of valid work must never get the
plugin restarted (containers created meanwhile would go uninjected).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from typing import Callable

from mokka.core import metrics as m
from mokka.core import probes
from mokka.nri.runtime_info import RuntimeInfo, wedge_threshold_s

GateReady = Callable[[], "tuple[bool, str]"]



def _always_ready() -> tuple[bool, str]:
    return True, ""


class Health:
    def __init__(self, now: Callable[[], float] = time.monotonic,
                 gate_ready: GateReady = _always_ready, *,
                 skip_reasons: tuple[str, ...] = (), gate_outcomes: tuple[str, ...] = ()) -> None:
        """``skip_reasons`` and ``gate_outcomes``: label values shown (as 0) from the start."""
        self._now = now
        self.gate_ready = gate_ready     # settable: the gate is built after the probes' facts
        self._lock = threading.Lock()
        self._registered = False
        self._runtime: RuntimeInfo | None = None     # kept across reconnects
        self._tokens = itertools.count()
        self._in_flight: dict[int, float] = {}
        self._gauges: dict[str, int] = dict.fromkeys(GAUGES, 0)
        self.registry = reg = m.Registry()
        self._counters = {name: reg.add(m.Counter(METRIC_PREFIX + name, text, initial=[()]))
                          for name, text in COUNTERS.items()}
        self._injected = reg.add(m.Counter(
            METRIC_PREFIX + "containers_injected_total", "containers given an adjustment",
            initial=[()]))
        self._skipped = reg.add(m.Counter(
            METRIC_PREFIX + "containers_skipped_total",
            "containers left as authored, by reason", ("reason",),
            initial=[(r,) for r in skip_reasons]))
        self._gate = reg.add(m.Counter(
            METRIC_PREFIX + "gate_checks_total", "staging gate checks before a decision, by outcome",
            ("outcome",), initial=[(o,) for o in gate_outcomes]))
        self.decision_seconds = reg.add(m.Histogram(
            METRIC_PREFIX + "decision_seconds",
            "time the CreateContainer handler took to decide (gate included)"))
        self.request_seconds = reg.add(m.Histogram(
            METRIC_PREFIX + "request_seconds",
            "time from reading a CreateContainer to sending its reply"))
        reg.add(m.Gauge(METRIC_PREFIX + "info", "1; runtime is the registered runtime",
                        ("runtime", "version"), source=self._runtime_info))
        for name, text in GAUGE_HELP.items():
            reg.add(m.Gauge(METRIC_PREFIX + name, text,
                            source=lambda name=name: [((), self._gauge_now(name))]))
        #: Read by /metrics: CreateContainers received and not yet answered.
        self.in_flight_count: Callable[[], int] = lambda: 0

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

    def count(self, name: str, n: int = 1) -> int:
        """Add ``n`` to the counter ``name`` (one of COUNTERS); its new value."""
        return int(self._counters[name].inc(n=n))

    def injected(self) -> None:
        self._injected.inc()

    def skipped(self, reason: str) -> None:
        """A container left as authored, for ``reason`` (a label value)."""
        self._skipped.inc(reason)

    def gate_checked(self, outcome: str) -> None:
        """A gate check before a decision ended in ``outcome`` (mokka.nri.gate.outcome)."""
        self._gate.inc(outcome)

    def gauge(self, name: str, value: int) -> None:
        with self._lock:
            self._gauges[name] = value

    def counter(self, name: str) -> int:
        return int(self._counters[name].value())

    def begin(self) -> int:
        """A CreateContainer handler runs from now; pass the token to ``end``."""
        with self._lock:
            token = next(self._tokens)
            self._in_flight[token] = self._now()
            return token

    def end(self, token: int) -> None:
        """The handler is done."""
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
            ok, reason = self.gate_ready()
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
                return 503, (f"a CreateContainer handler has been running for {age:.1f}s, "
                             f"longer than the {threshold:.1f}s threshold "
                             "(twice the runtime's request timeout)")
        return 200, "ok"


    def _gauge_now(self, name: str) -> int:
        with self._lock:
            if name == "create_container_running":
                return len(self._in_flight)
            if name == "registered":
                return int(self._registered)
            if name in self._gauges:
                return self._gauges[name]
        return self.in_flight_count()

    def _runtime_info(self):
        with self._lock:
            runtime = self._runtime
        return [] if runtime is None else [((runtime.name, runtime.version), 1)]

    def metrics(self) -> tuple[int, str]:
        """Prometheus text exposition of everything recorded."""
        return 200, self.registry.render()


METRIC_PREFIX = "mokka_nri_"
#: Counter name -> help text.
COUNTERS = {
    "create_container_total": "CreateContainer requests answered",
    "failed_open_total": "containers left unmodified because of an error (failed open)",
    "rejected_requests_total": ("requests the codec refused (oversize, bad stream id, "
                                "undecodable envelope), answered with no adjustment"),
    "protocol_errors_total": "connections closed because the byte stream was corrupt",
    "backpressure_pauses_total": "times reading from the runtime paused until replies drained",
    "reconnects_total": "connections to the runtime made after an earlier one ended",
}
GAUGE_HELP = {
    "create_container_in_flight": "CreateContainer requests received and not yet answered",
    "overloaded": "1 while reading is paused for backpressure in the current episode",
    "create_container_running": "CreateContainer handlers running now",
    "registered": "1 while registered with the container runtime",
}
GAUGES = ("overloaded",)
#: containers_skipped_total's reasons besides the decision's (mokka.nri.inject.skip.LABELS).
SKIPPED_NOT_STAGED = "not_staged"        # the staging gate was closed


def routes(health: Health) -> dict:
    return {"/readyz": health.readyz, "/healthz": health.healthz, "/metrics": health.metrics}


class ProbeServer(probes.ProbeServer):
    """The plugin's probes on HOST:PORT."""

    def __init__(self, host: str, port: int, health: Health) -> None:
        super().__init__(host, port, routes(health), name="nri-probes")


def serve(addr: str, health: Health) -> probes.ProbeServer | None:
    """Start the probe server on --health-addr; None when it is disabled."""
    return probes.serve(addr, routes(health), name="nri-probes")
