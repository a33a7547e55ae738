"""What the probes answer, kept apart from HTTP and from the state source.

The reconciler and the loop push facts in (wave results, a rejected document);
``probe(path)`` turns them into (status, JSON body). Time is passed in.
/metrics shows the same facts in the Prometheus text format.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

from mokka.core import metrics as m

METRIC_PREFIX = "mokka_agent_"


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Health:
    def __init__(self, readiness: Callable[[], Iterable[tuple[str, bool, str]]] = lambda: (),
                 now: Callable[[], float] = time.time,
                 daemons: Callable[[], Iterable[tuple[str, bool]]] = lambda: (),
                 simulators: Iterable[str] = (),
                 notices: Callable[[], dict] = dict):
        """``daemons``: (name, up) of each daemon, read at /metrics; ``simulators``:
        names whose stage-error series show (as 0) from the start; ``notices``: what the
        simulators last set right or worked around ({name: {"file", "reason"}}), at /healthz."""
        self._now = now
        self._notices = notices
        self._readiness = readiness
        self._mu = threading.Lock()
        self._failures: dict[str, str] = {}
        self._failed_at: float | None = None
        self._busy: str | None = "not staged yet"    # why /stagedz is closed
        self._generation = 0
        self._digest = ""
        self._rejected: dict | None = None
        self._apply_error: str | None = None
        self.registry = reg = m.Registry()
        self._passes = reg.add(m.Counter(
            METRIC_PREFIX + "reconcile_passes_total", "reconcile passes, by result",
            ("result",), initial=[("ok",), ("failed",)]))
        self._pass_seconds = reg.add(m.Histogram(
            METRIC_PREFIX + "reconcile_duration_seconds", "time a reconcile pass took",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)))
        self._stage_errors = reg.add(m.Counter(
            METRIC_PREFIX + "stage_errors_total", "Stage failures, by simulator",
            ("simulator",), initial=[(n,) for n in simulators]))
        reg.add(m.Gauge(METRIC_PREFIX + "generation", "generation of the last staged state",
                        source=lambda: [((), self._generation)]))
        reg.add(m.Gauge(METRIC_PREFIX + "staged", "1 while /stagedz is open",
                        source=lambda: [((), int(self._busy is None))]))
        reg.add(m.Gauge(METRIC_PREFIX + "daemon_up", "1 while the daemon is running and ready",
                        ("simulator",), source=lambda: [((n,), int(up)) for n, up in daemons()]))

    # --- facts pushed in -----------------------------------------------------
    def stage_started(self) -> None:
        with self._mu:
            self._busy = "staging"

    def stage_finished(self, generation: int, digest: str, failures: dict[str, str]) -> None:
        for name in failures:
            self._stage_errors.inc(name)
        with self._mu:
            self._failures = dict(failures)
            self._failed_at = self._now() if failures else None
            self._generation = generation
            if failures:
                self._busy = "last Stage failed: " + ", ".join(sorted(failures))
            else:
                self._busy, self._digest = None, digest

    def pass_finished(self, ok: bool, seconds: float) -> None:
        self._passes.inc("ok" if ok else "failed")
        self._pass_seconds.observe(seconds)

    def apply_finished(self, error: str | None) -> None:
        # Recorded for the log and body only: /stagedz follows Stage, not Apply.
        with self._mu:
            self._apply_error = error

    def teardown_started(self) -> None:
        with self._mu:
            self._busy = "tearing down"

    def rejected(self, file: str, reason: str) -> None:
        with self._mu:
            self._rejected = {"file": file, "reason": reason, "since": _stamp(self._now())}

    def accepted(self) -> None:
        with self._mu:
            self._rejected = None

    # --- probes --------------------------------------------------------------
    def healthz(self) -> tuple[int, dict]:
        with self._mu:
            body = {"generation": self._generation}
            if self._rejected:
                body["rejected"] = dict(self._rejected)     # still live: last good state serves
            if self._apply_error:
                body["apply_error"] = self._apply_error
            notices = self._notices()
            if notices:
                body["notices"] = notices               # worked around: still serving
            if self._failures:
                body["failed"] = dict(self._failures)
                body["failed_at"] = _stamp(self._failed_at or 0)
                return 503, body
            return 200, body

    def readyz(self) -> tuple[int, dict]:
        for name, ok, reason in self._readiness():
            if not ok:
                return 503, {"ready": False, "simulator": name, "reason": reason}
        return 200, {"ready": True}

    def metrics(self) -> tuple[int, str]:
        return 200, self.registry.render()

    def stagedz(self) -> tuple[int, dict]:
        with self._mu:
            body = {"staged": self._busy is None, "generation": self._generation,
                    "digest": self._digest}
            if self._busy is not None:
                body["reason"] = self._busy
                return 503, body
            return 200, body
