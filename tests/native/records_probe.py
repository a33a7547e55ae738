"""A CUDA process and an NVML monitor, as the process records see them (LD_LIBRARY_PATH
names the mock library).

    records_probe.py hold GPU BYTES   keep a record of BYTES on GPU (nvmlMokkaSetProcessMemory,
                                      as the mock CUDA driver does), print {"pid", "ret"}; for
                                      each line "again" on stdin set it again and print {"ret"};
                                      exit at any other line or the end
    records_probe.py churn GPU N      N updates of its record on GPU (a new size each, a release
                                      every 10th), then keep the last (N MiB); print {"pid",
                                      "failed": updates refused}, wait for a line on stdin, exit
    records_probe.py list             through pynvml, per GPU: the compute processes
                                      [[pid, used, name], ...] (names by nvmlSystemGetProcessName)
                                      and memory used and free (v2)
    records_probe.py watch            a monitor: nvmlInit once, then list's JSON line for each
                                      line on stdin, until its end
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

import pynvml


def hold(gpu: int, size: int) -> None:
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(gpu)
    lib = ctypes.CDLL("libnvidia-ml.so.1")

    def keep() -> int:
        return lib.nvmlMokkaSetProcessMemory(handle, ctypes.c_ulonglong(size))

    print(json.dumps({"pid": os.getpid(), "ret": keep()}), flush=True)
    for line in sys.stdin:
        if line.strip() != "again":
            break
        print(json.dumps({"ret": keep()}), flush=True)


def churn(gpu: int, updates: int) -> None:
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(gpu)
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    failed = 0
    for n in range(1, updates + 1):
        if n % 10 == 0:
            failed += lib.nvmlMokkaReleaseProcess(handle) != 0
        failed += lib.nvmlMokkaSetProcessMemory(handle, ctypes.c_ulonglong(n << 20)) != 0
    print(json.dumps({"pid": os.getpid(), "failed": failed}), flush=True)
    sys.stdin.readline()


def name_of(pid: int) -> str | None:
    """The process's name, or None when it left the list since (NOT_FOUND: the race every
    NVML monitor meets between the list and the name, as on a real GPU)."""
    try:
        return pynvml.nvmlSystemGetProcessName(pid)
    except pynvml.NVMLError_NotFound:
        return None


def listing() -> list:
    out = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        procs = [[p.pid, p.usedGpuMemory, name_of(p.pid)] for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
        out.append({"processes": procs, "used": mem.used, "free": mem.free})
    return out


def watch() -> None:
    pynvml.nvmlInit()
    for _ in sys.stdin:
        print(json.dumps(listing()), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "churn":
        churn(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "watch":
        watch()
    else:
        pynvml.nvmlInit()
        print(json.dumps(listing()))
