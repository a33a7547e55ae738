"""Runs inside a process that loads the mock libnvidia-ml.so.1: NVML's setters and the
readings they change, through pynvml.

    probe_settings.py read GPU                 the readings of GPU (index) the setters change
    probe_settings.py affinity                 the CPUs of the process after each step: bound to
                                               CPU 0 alone, then nvmlDeviceSetCpuAffinity of GPU 4,
                                               of GPU 0, nvmlDeviceClearCpuAffinity
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
        "app_clocks_restricted": call(n.nvmlDeviceGetAPIRestriction, h, n.NVML_RESTRICTED_API_SET_APPLICATION_CLOCKS),
        "ecc_counts": ecc_counts(h),
    }


def ecc_counts(h) -> list:
    """Corrected counts: volatile, aggregate (totals), volatile in device memory, and the
    field NVML_FI_DEV_ECC_SBE_AGG_TOTAL (5)."""
    corrected = n.NVML_MEMORY_ERROR_TYPE_CORRECTED
    return [call(n.nvmlDeviceGetTotalEccErrors, h, corrected, n.NVML_VOLATILE_ECC),
            call(n.nvmlDeviceGetTotalEccErrors, h, corrected, n.NVML_AGGREGATE_ECC),
            call(n.nvmlDeviceGetMemoryErrorCounter, h, corrected, n.NVML_VOLATILE_ECC,
                 n.NVML_MEMORY_LOCATION_DEVICE_MEMORY),
            field(h, 5)]


def field(h, fid):
    value = n.nvmlDeviceGetFieldValues(h, [fid])[0]
    return value.value.ullVal if value.nvmlReturn == 0 else ["err", value.nvmlReturn]


def affinity() -> list:
    os.sched_setaffinity(0, {0})
    steps = [sorted(os.sched_getaffinity(0))]
    for gpu in (4, 0):
        n.nvmlDeviceSetCpuAffinity(n.nvmlDeviceGetHandleByIndex(gpu))
        steps.append(sorted(os.sched_getaffinity(0)))
    n.nvmlDeviceClearCpuAffinity(n.nvmlDeviceGetHandleByIndex(0))
    return steps + [sorted(os.sched_getaffinity(0))]


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
    if argv[0] == "affinity":
        print(json.dumps(affinity()))
        return 0
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
