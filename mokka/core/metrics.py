"""Counters, gauges and histograms, rendered in the Prometheus text format (0.0.4).

Hand-written on purpose, not PyPI ``prometheus-client``: the NRI plugin
records a few samples on every CreateContainer, and here that costs one lock
and a ``bisect`` per sample, with nothing to import at start-up and no new
runtime dependency in the zipapp (figures in the commit that added this; the
tests parse every /metrics with prometheus-client's own parser).

A metric is a family: ``labels`` names its label keys, and each value is
recorded under a tuple of label values (``()`` when it has none). Rendering
is a pure function of what was recorded.
"""

from __future__ import annotations

import bisect
import math
import threading
from typing import Callable, Iterable

#: Seconds; from 0.5 ms (a skipped container) to 10 s (containerd's NRI request timeout is 2 s).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _labels(keys: tuple[str, ...], values: tuple, extra: str = "") -> str:
    parts = [f'{k}="{_escape(str(v))}"' for k, v in zip(keys, values)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


class _Family:
    kind = ""

    def __init__(self, name: str, help: str, labels: tuple[str, ...] = ()) -> None:
        self.name, self.help, self.labels = name, help, tuple(labels)
        self._lock = threading.Lock()

    def _header(self) -> list[str]:
        return [f"# HELP {self.name} {_escape(self.help)}", f"# TYPE {self.name} {self.kind}"]


class Counter(_Family):
    kind = "counter"

    def __init__(self, name: str, help: str, labels: tuple[str, ...] = (),
                 initial: Iterable[tuple] = ()) -> None:
        super().__init__(name, help, labels)
        # Series named in ``initial`` show 0 before the first event, so a rate() has a start.
        self._values: dict[tuple, float] = {tuple(v): 0 for v in initial}

    def inc(self, *values, n: float = 1) -> float:
        with self._lock:
            total = self._values.get(values, 0) + n
            self._values[values] = total
            return total

    def value(self, *values) -> float:
        with self._lock:
            return self._values.get(values, 0)

    def render(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        return self._header() + [f"{self.name}{_labels(self.labels, k)} {_number(v)}"
                                 for k, v in items]


class Gauge(Counter):
    """Set, or read at render time from ``source`` (label values -> value)."""
    kind = "gauge"

    def __init__(self, name: str, help: str, labels: tuple[str, ...] = (),
                 source: Callable[[], Iterable[tuple[tuple, float]]] | None = None) -> None:
        super().__init__(name, help, labels)
        self._source = source

    def set(self, value: float, *values) -> None:
        with self._lock:
            self._values[values] = value

    def render(self) -> list[str]:
        if self._source is not None:
            live = dict(self._source())
            with self._lock:
                self._values = live
        return super().render()


class Histogram(_Family):
    kind = "histogram"

    def __init__(self, name: str, help: str, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        super().__init__(name, help)
        self.buckets = tuple(sorted(buckets))
        self._counts = [0] * (len(self.buckets) + 1)      # the last one is +Inf
        self._sum = 0.0

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.buckets, value)      # le is inclusive
        with self._lock:
            self._counts[i] += 1
            self._sum += value

    @property
    def count(self) -> int:
        with self._lock:
            return sum(self._counts)

    def render(self) -> list[str]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        lines, running = self._header(), 0
        for bound, n in zip((*self.buckets, math.inf), counts):
            running += n
            lines.append(f'{self.name}_bucket{{le="{_number(bound) if bound == math.inf else repr(float(bound))}"}} {running}')
        lines += [f"{self.name}_sum {repr(float(total))}", f"{self.name}_count {running}"]
        return lines


class Registry:
    """The families one /metrics shows, in the order they were added."""

    def __init__(self) -> None:
        self._families: list[_Family] = []

    def add(self, family):
        self._families.append(family)
        return family

    def render(self) -> str:
        lines: list[str] = []
        for family in self._families:
            lines += family.render()
        return "\n".join(lines)     # the probe server ends the body with a newline
