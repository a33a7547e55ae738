"""Runs inside a process that loads the mock libnvidia-ml.so.1: NVML's setters and the
readings they change, through pynvml.

    probe_settings.py read GPU                 the readings of GPU (index) the setters change
    probe_settings.py [--as-nobody] set GPU CALL [ARG...]
                                               one setter's return code (0: success); CALL is
                                               the name after nvmlDevice (SetPowerManagementLimit);
                                               --as-nobody: the process gives up root after
                                               nvmlInit (uid and gid 65534) before it calls

Prints one JSON document. An NVML error is ["err", code].
"""

from __future__ import annotations

import json
import os
import sys

import pynvml as n


def call(fn, *args):
    try:
        return fn(*args)
    except n.NVMLError as exc:
        return ["err", exc.value]


def read(h) -> dict:
    return {
        "power_limit": call(n.nvmlDeviceGetPowerManagementLimit, h),
        "enforced_limit": call(n.nvmlDeviceGetEnforcedPowerLimit, h),
        "persistence": call(n.nvmlDeviceGetPersistenceMode, h),
        "compute_mode": call(n.nvmlDeviceGetComputeMode, h),
        "accounting": call(n.nvmlDeviceGetAccountingMode, h),
        "app_graphics": call(n.nvmlDeviceGetApplicationsClock, h, n.NVML_CLOCK_GRAPHICS),
        "app_memory": call(n.nvmlDeviceGetApplicationsClock, h, n.NVML_CLOCK_MEM),
        "graphics": call(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_GRAPHICS),
        "sm": call(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
        "ecc": call(n.nvmlDeviceGetEccMode, h),
        "memory": call(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
        "draw": call(n.nvmlDeviceGetPowerUsage, h),
        "reasons": call(n.nvmlDeviceGetCurrentClocksEventReasons, h),
    }


def power_v2(h, scope, mw, version=None):
    """nvmlDeviceSetPowerManagementLimit_v2 with an nvmlPowerValue_v2_t."""
    import ctypes

    class PowerValue(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint), ("powerScope", ctypes.c_ubyte), ("powerValueMw", ctypes.c_uint)]
    value = PowerValue(version if version is not None else ctypes.sizeof(PowerValue) | (2 << 24), scope, mw)
    fn = n._nvmlGetFunctionPointer("nvmlDeviceSetPowerManagementLimit_v2")
    code = fn(h, ctypes.byref(value))
    if code:
        raise n.NVMLError(code)


def main(argv: list[str]) -> int:
    nobody = argv[:1] == ["--as-nobody"]
    argv = argv[1:] if nobody else argv
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(int(argv[1]))
    if argv[0] == "read":
        print(json.dumps(read(h)))
        return 0
    name, args = argv[2], [int(a, 0) for a in argv[3:]]
    fn = power_v2 if name == "SetPowerManagementLimit_v2" else getattr(n, "nvmlDevice" + name)
    if nobody:
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
    result = call(fn, h, *args)
    print(json.dumps(result[1] if isinstance(result, list) else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
