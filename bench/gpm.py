"""The cost of NVML's moving readers DCGM polls, against a plain nvmlDeviceGetUtilizationRates
on the same GPU, measured in the same run, interleaved (target <= 2x):

- a GPM sample pair and nvmlGpmMetricsGet of every metric id below NVML_GPM_METRIC_MAX
  (what one DCGM_FI_PROF_* poll costs the library);
- nvmlDeviceGetProcessUtilization of GPU 0 while 4 CUDA processes hold it.

The node is an h100 staged into a temp dir with this checkout's library (build/native); the
processes are tests/native/records_forger.py's. The calls go through ctypes, the same per call.

    python3 bench/gpm.py [-n ROUNDS] [--calls N]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from common import build_native_libraries, require_test_environment  # noqa: E402

require_test_environment()

from mokka.core import compile as comp  # noqa: E402
from mokka.core import names  # noqa: E402
from mokka.core import profile as prof  # noqa: E402
from mokka.engine import flatstate  # noqa: E402

FORGER = os.path.join(REPO, "tests", "native", "records_forger.py")
PROCESSES = 4
TARGET = 2.0
METRIC_IDS = range(1, 98)                 # nvml.h: NVML_GPM_METRIC_MAX is 98
NVML_SUCCESS = 0


class Metric(ctypes.Structure):           # nvmlGpmMetric_t
    _fields_ = [("metricId", ctypes.c_uint), ("nvmlReturn", ctypes.c_int), ("value", ctypes.c_double),
                ("shortName", ctypes.c_char_p), ("longName", ctypes.c_char_p), ("unit", ctypes.c_char_p)]


class MetricsGet(ctypes.Structure):       # nvmlGpmMetricsGet_t
    _fields_ = [("version", ctypes.c_uint), ("numMetrics", ctypes.c_uint), ("sample1", ctypes.c_void_p),
                ("sample2", ctypes.c_void_p), ("metrics", Metric * 98)]


class ProcessSample(ctypes.Structure):    # nvmlProcessUtilizationSample_t
    _fields_ = [("pid", ctypes.c_uint), ("timeStamp", ctypes.c_ulonglong), ("smUtil", ctypes.c_uint),
                ("memUtil", ctypes.c_uint), ("encUtil", ctypes.c_uint), ("decUtil", ctypes.c_uint)]


def stage_node(directory: str) -> str:
    """An h100 profile, its companion and the records directory beside them; the profile's path."""
    loaded = prof.load("h100")
    config = os.path.join(directory, names.PROFILE_FILE)
    with open(config, "wb") as f:
        f.write(loaded.text)
    with open(flatstate.companion_path(config), "wb") as f:
        f.write(flatstate.state_companion(comp.compile_profile(loaded)))
    records = os.path.join(directory, names.PROCESS_RECORDS_DIR)
    os.mkdir(records)
    os.chmod(records, names.PROCESS_RECORDS_MODE)
    return config


def forge(records: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, FORGER, "hold", records, "0", "1", str(PROCESSES), str(1 << 30),
                             b"train".hex()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if not proc.stdout.readline():
        raise SystemExit("the forger failed (its stderr is above)")
    return proc


def check(ret: int, what: str) -> None:
    if ret != NVML_SUCCESS:
        raise SystemExit(f"bench/gpm.py: {what} returned {ret}")


def readers(lib, device):
    """The three timed operations, each checked once."""
    util = (ctypes.c_uint * 2)()

    def rates():
        return lib.nvmlDeviceGetUtilizationRates(device, util)

    s1, s2 = ctypes.c_void_p(), ctypes.c_void_p()
    check(lib.nvmlGpmSampleAlloc(ctypes.byref(s1)), "nvmlGpmSampleAlloc")
    check(lib.nvmlGpmSampleAlloc(ctypes.byref(s2)), "nvmlGpmSampleAlloc")
    req = MetricsGet(version=1, numMetrics=len(METRIC_IDS), sample1=s1, sample2=s2)
    for i, metric in enumerate(METRIC_IDS):
        req.metrics[i].metricId = metric
    ref = ctypes.byref(req)

    def gpm():
        lib.nvmlGpmSampleGet(device, s1)
        lib.nvmlGpmSampleGet(device, s2)
        return lib.nvmlGpmMetricsGet(ref)

    samples, count = (ProcessSample * 64)(), ctypes.c_uint()

    def processes():
        count.value = 64
        return lib.nvmlDeviceGetProcessUtilization(device, samples, ctypes.byref(count), ctypes.c_ulonglong(0))

    for label, op in (("rates", rates), ("gpm", gpm), ("processes", processes)):
        check(op(), label)
    if count.value != PROCESSES:
        raise SystemExit(f"bench/gpm.py: {count.value} processes listed, {PROCESSES} expected")
    return {"nvmlDeviceGetUtilizationRates": rates, "GPM sample pair + MetricsGet (97 ids)": gpm,
            "nvmlDeviceGetProcessUtilization (4 processes)": processes}


def per_call_us(op, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        op()
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000)
    opts = ap.parse_args()
    build_native_libraries()
    library = os.path.join(REPO, "build", "native", os.uname().machine, names.NVML_LIB_FILE)
    with tempfile.TemporaryDirectory(prefix="mokka-bench-gpm-") as tmp:
        config = stage_node(tmp)
        forger = forge(os.path.join(tmp, names.PROCESS_RECORDS_DIR))
        try:
            os.environ[names.ENV_NVML_CONFIG] = config
            os.environ[names.ENV_DEV_ROOT] = os.path.join(tmp, "devroot")
            lib = ctypes.CDLL(library)
            check(lib.nvmlInit_v2(), "nvmlInit_v2")
            device = ctypes.c_void_p()
            check(lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(device)), "nvmlDeviceGetHandleByIndex_v2")
            ops = readers(lib, device)
            times = {label: [] for label in ops}
            for _ in range(opts.rounds):
                for label, op in ops.items():
                    times[label].append(per_call_us(op, opts.calls))
            lib.nvmlShutdown()
        finally:
            forger.communicate("\n")
    medians = {label: statistics.median(t) for label, t in times.items()}
    base = medians["nvmlDeviceGetUtilizationRates"]
    missed = False
    for label, median in medians.items():
        ratio = median / base
        verdict = ""
        if label != "nvmlDeviceGetUtilizationRates":
            missed |= ratio > TARGET
            verdict = f"  target <= {TARGET:.1f}x: {'met' if ratio <= TARGET else 'MISSED'}"
        print(f"{label:<48} median {median:7.2f} us  = {ratio:5.2f}x baseline{verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
