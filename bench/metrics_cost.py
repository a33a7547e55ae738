"""Per-request cost of the plugin's metrics: mokka.core.metrics vs PyPI prometheus-client.

What one CreateContainer records (the answered counter, a labelled
skipped/injected counter, a gate outcome, the decision and request
histograms), N times, single thread and with 4 threads at once (the plugin's
workers); plus what importing each costs (time, RSS) in a fresh interpreter.

    python bench/metrics_cost.py [--count 200000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import require_test_environment  # noqa: E402

require_test_environment()


def ours():
    from mokka.core import metrics as m
    reg = m.Registry()
    answered = reg.add(m.Counter("a_total", "a"))
    skipped = reg.add(m.Counter("s_total", "s", ("reason",)))
    gate = reg.add(m.Counter("g_total", "g", ("outcome",)))
    dec, req = reg.add(m.Histogram("d_seconds", "d")), reg.add(m.Histogram("r_seconds", "r"))

    def record():
        answered.inc(); skipped.inc("nothing_selected"); gate.inc("open")
        dec.observe(0.0004); req.observe(0.0009)
    return record, reg.render


def theirs():
    import prometheus_client as p
    from mokka.core.metrics import LATENCY_BUCKETS
    reg = p.CollectorRegistry()
    answered = p.Counter("a", "a", registry=reg)
    skipped = p.Counter("s", "s", ["reason"], registry=reg)
    gate = p.Counter("g", "g", ["outcome"], registry=reg)
    dec = p.Histogram("d_seconds", "d", buckets=LATENCY_BUCKETS, registry=reg)
    req = p.Histogram("r_seconds", "r", buckets=LATENCY_BUCKETS, registry=reg)

    def record():
        answered.inc(); skipped.labels("nothing_selected").inc(); gate.labels("open").inc()
        dec.observe(0.0004); req.observe(0.0009)
    return record, lambda: p.generate_latest(reg).decode()


def per_call_us(record, count: int, threads: int) -> float:
    def run():
        for _ in range(count // threads):
            record()
    ts = [threading.Thread(target=run) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return (time.perf_counter() - t0) / count * 1e6


IMPORT = """
import sys, time
sys.path.insert(0, {root!r})
def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])
before = rss()
t0 = time.perf_counter()
import {module}
print(round((time.perf_counter() - t0) * 1e3, 2), rss() - before)
"""


def import_cost(module: str) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", IMPORT.format(root=ROOT, module=module)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=200000)
    args = ap.parse_args()
    rows = {}
    for name, make, module in (("mokka.core.metrics", ours, "mokka.core.metrics"),
                               ("prometheus_client", theirs, "prometheus_client")):
        record, render = make()
        single = per_call_us(record, args.count, 1)
        four = per_call_us(record, args.count, 4)
        t0 = time.perf_counter()
        render()
        render_ms = (time.perf_counter() - t0) * 1e3
        imp_ms, imp_kb = import_cost(module)
        rows[name] = (single, four, render_ms, imp_ms, imp_kb)
        print(f"{name:20s} record/request {single:6.2f} us (1 thread) {four:6.2f} us (4 threads)"
              f"  render {render_ms:5.2f} ms  import {imp_ms:6.1f} ms, +{imp_kb} KiB RSS")
    a, b = rows["prometheus_client"], rows["mokka.core.metrics"]
    print(f"ratio prometheus_client / ours: record {a[0] / b[0]:.2f}x (1 thread), "
          f"{a[1] / b[1]:.2f}x (4 threads); import {a[3] / b[3]:.1f}x")


if __name__ == "__main__":
    main()
