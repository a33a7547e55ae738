"""Runs inside a process that loads the mock libnvidia-ml.so.1 (LD_LIBRARY_PATH): what a
monitor does while the node's profile is swapped under it (test_profile_swap.py).

    swap_reader.py loop STOP [fabric]   nvmlInit, nvmlDeviceGetCount (with `fabric`: GPU 0's
                                        clique), nvmlShutdown, round after round until the
                                        file STOP exists; prints "ready" after the first
                                        round, then one JSON summary: rounds, the failed
                                        inits by code, how often each count (clique) was seen
    swap_reader.py once                 prints "loaded", waits for a line on stdin, then one
                                        nvmlInit; prints {"init": code, "count": n}

ctypes only: every round is a fresh nvmlInit that reads the pair from disk (the library
rebuilds its node once no init is held).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

from tests.native.probe import FABRIC_V2, FabricInfoV2


def library():
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    for name in ("nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
                 "nvmlDeviceGetGpuFabricInfoV"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def clique(lib) -> int | str:
    handle = ctypes.c_void_p()
    ret = lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
    if ret:
        return f"handle error {ret}"
    info = FabricInfoV2(version=FABRIC_V2)
    ret = lib.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    return info.cliqueId if ret == 0 else f"fabric error {ret}"


def loop(stop: str, fabric: bool) -> None:
    lib = library()
    rounds, failed, seen = 0, {}, {}
    while rounds == 0 or not os.path.exists(stop):
        ret = lib.nvmlInit_v2()
        if ret == 0:
            count = ctypes.c_uint()
            ret = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
            key = str(clique(lib) if fabric else count.value) if ret == 0 else f"count error {ret}"
            seen[key] = seen.get(key, 0) + 1
            lib.nvmlShutdown()
        else:
            failed[str(ret)] = failed.get(str(ret), 0) + 1
        rounds += 1
        if rounds == 1:
            print("ready", flush=True)
    print(json.dumps({"rounds": rounds, "failed": failed, "seen": seen}), flush=True)


def once() -> None:
    lib = library()
    print("loaded", flush=True)
    sys.stdin.readline()
    ret = lib.nvmlInit_v2()
    count = ctypes.c_uint()
    if ret == 0:
        lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
    print(json.dumps({"init": ret, "count": count.value}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "loop":
        loop(sys.argv[2], sys.argv[3:] == ["fabric"])
    else:
        once()
