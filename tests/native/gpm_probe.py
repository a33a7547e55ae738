"""Runs inside a process that loads the mock libnvidia-ml.so.1 (LD_LIBRARY_PATH): NVML's GPM
calls through pynvml.

    gpm_probe.py support INDEX                      isSupportedDevice, and the streaming state
    gpm_probe.py metrics INDEX FIRST SECOND [GI]    a sample at second FIRST and one at SECOND
                                                    (MOCK_NVML_CLOCK, nvmlInit again between them;
                                                    GI: MIG samples of that GPU instance), then
                                                    every id 1..97: {id: [nvmlReturn, value, unit]}
    gpm_probe.py handles INDEX                      what bad handles and structs answer, by case
    gpm_probe.py threads INDEX                      4 threads each allocating, sampling, reading
                                                    SM activity and freeing 500 times, and one
                                                    freeing garbage: the errors seen, by kind

Prints one JSON document; an NVML error is ["err", code].
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

import pynvml as n

from mokka.core import names

#: Every id below nvml.h's NVML_GPM_METRIC_MAX (98), those it names and the gaps between them.
IDS = range(1, 98)


def call(fn, *args):
    try:
        return fn(*args)
    except n.NVMLError as e:
        return ["err", e.value]


def handle(index: int):
    return n.nvmlDeviceGetHandleByIndex(index)


def sample_at(second: str, index: int, gi: int | None):
    os.environ[names.ENV_NVML_CLOCK] = second
    n.nvmlInit()
    s = n.nvmlGpmSampleAlloc()
    got = (n.nvmlGpmSampleGet(handle(index), s) if gi is None
           else n.nvmlGpmMigSampleGet(handle(index), gi, s))
    n.nvmlShutdown()
    return got


def metrics(index: int, first: str, second: str, gi: int | None):
    s1, s2 = sample_at(first, index, gi), sample_at(second, index, gi)
    n.nvmlInit()
    req = n.c_nvmlGpmMetricsGet_t()
    req.version = n.NVML_GPM_METRICS_GET_VERSION
    req.numMetrics = len(IDS)
    req.sample1, req.sample2 = s1, s2
    for i, metric in enumerate(IDS):
        req.metrics[i].metricId = metric
    n.nvmlGpmMetricsGet(req)
    out = {}
    for m in req.metrics[:req.numMetrics]:
        unit = m.metricInfo.unit.decode() if m.metricInfo.unit else None
        out[m.metricId] = [m.nvmlReturn, round(m.value, 3), unit]
    n.nvmlGpmSampleFree(s1)
    n.nvmlGpmSampleFree(s2)
    return out


def handles(index: int) -> dict:
    n.nvmlInit()
    lib = n._nvmlGetFunctionPointer
    h = handle(index)
    out = {}
    s = n.nvmlGpmSampleAlloc()
    out["free"] = call(n.nvmlGpmSampleFree, s)
    out["free_twice"] = call(n.nvmlGpmSampleFree, s)
    out["get_into_freed"] = call(n.nvmlGpmSampleGet, h, s)
    garbage = ctypes.cast(ctypes.c_void_p(0xdeadbeef), type(s))
    out["free_garbage"] = call(n.nvmlGpmSampleFree, garbage)
    out["free_null"] = call(n.nvmlGpmSampleFree, None)
    out["alloc_null"] = lib("nvmlGpmSampleAlloc")(None)
    out["get_garbage"] = call(n.nvmlGpmSampleGet, h, garbage)
    # metrics of two samples never taken, of one never taken beside a taken one (the taken
    # one's second: the same value as two taken samples give), of a freed one, with a
    # version nvml.h does not define
    a, b = n.nvmlGpmSampleAlloc(), n.nvmlGpmSampleAlloc()
    req = n.c_nvmlGpmMetricsGet_t()
    req.version, req.numMetrics, req.sample1, req.sample2 = n.NVML_GPM_METRICS_GET_VERSION, 1, a, b
    req.metrics[0].metricId = 2
    out["metrics_untaken"] = call(n.nvmlGpmMetricsGet, req)
    n.nvmlGpmSampleGet(h, a)
    one = call(n.nvmlGpmMetricsGet, req)
    out["metrics_one_taken"] = [req.metrics[0].nvmlReturn, req.metrics[0].value] if one is req else one
    n.nvmlGpmSampleGet(h, b)
    out["metrics_taken"] = [req.metrics[0].nvmlReturn, req.metrics[0].value] \
        if call(n.nvmlGpmMetricsGet, req) is req else "failed"
    req.version = 2
    out["metrics_version"] = call(n.nvmlGpmMetricsGet, req)
    req.version, req.numMetrics = n.NVML_GPM_METRICS_GET_VERSION, 99
    out["metrics_too_many"] = call(n.nvmlGpmMetricsGet, req)
    req.numMetrics = 1
    n.nvmlGpmSampleFree(b)
    out["metrics_freed"] = call(n.nvmlGpmMetricsGet, req)
    out["metrics_null"] = lib("nvmlGpmMetricsGet")(None)
    support = n.c_nvmlGpmSupport_t()
    support.version = 2
    out["support_version"] = lib("nvmlGpmQueryDeviceSupport")(h, ctypes.byref(support))
    # a process that never frees: the pool runs out, and freeing makes room again
    held = [a]
    while True:
        got = call(n.nvmlGpmSampleAlloc)
        if isinstance(got, list):
            out["exhausted"] = got
            break
        held.append(got)
    out["held"] = len(held)
    n.nvmlGpmSampleFree(held.pop())
    out["after_free"] = "allocated" if not isinstance(call(n.nvmlGpmSampleAlloc), list) else "refused"
    return out


def threads(index: int) -> dict:
    import threading
    n.nvmlInit()
    h = handle(index)
    seen: dict = {}
    lock = threading.Lock()

    def note(what):
        with lock:
            seen[what] = seen.get(what, 0) + 1

    def poll():
        for _ in range(500):
            try:
                a, b = n.nvmlGpmSampleAlloc(), n.nvmlGpmSampleAlloc()
                n.nvmlGpmSampleGet(h, a)
                n.nvmlGpmSampleGet(h, b)
                req = n.c_nvmlGpmMetricsGet_t()
                req.version, req.numMetrics, req.sample1, req.sample2 = n.NVML_GPM_METRICS_GET_VERSION, 1, a, b
                req.metrics[0].metricId = 2
                n.nvmlGpmMetricsGet(req)
                note(f"sm {req.metrics[0].value}")
                n.nvmlGpmSampleFree(a)
                n.nvmlGpmSampleFree(b)
            except n.NVMLError as e:
                note(f"err {e.value}")

    def garbage():
        for i in range(2000):
            bad = ctypes.cast(ctypes.c_void_p(0x1000 + i * 8), n.c_nvmlGpmSample_t)
            note(f"garbage {call(n.nvmlGpmSampleFree, bad)}")

    workers = [threading.Thread(target=poll) for _ in range(4)] + [threading.Thread(target=garbage)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return seen


def main(argv: list[str]) -> None:
    index = int(argv[1])
    if argv[0] == "support":
        n.nvmlInit()
        h = handle(index)
        got = call(n.nvmlGpmQueryDeviceSupport, h)
        out = {"supported": got if isinstance(got, list) else got.isSupportedDevice,
               "streaming": call(n.nvmlGpmQueryIfStreamingEnabled, h),
               "stream_on": call(n.nvmlGpmSetStreamingEnabled, h, 1),
               "stream_off": call(n.nvmlGpmSetStreamingEnabled, h, 0),
               "sample": call(lambda: n.nvmlGpmSampleGet(h, n.nvmlGpmSampleAlloc()) and "taken")}
    elif argv[0] == "metrics":
        out = call(metrics, index, argv[2], argv[3], int(argv[4]) if len(argv) > 4 else None)
    elif argv[0] == "threads":
        out = threads(index)
    else:
        out = handles(index)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
