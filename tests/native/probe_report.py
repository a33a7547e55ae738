"""Runs inside a process that loads the mock libnvidia-ml.so.1 (LD_LIBRARY_PATH): the NVML
calls behind rows of the 580 report, through ctypes with NVIDIA's layouts.

    probe_report.py values     per visible GPU: field values 74-76 and 251-253 as [type, value],
                               nvmlDeviceGetViolationStatus per policy, nvmlDeviceGetSramEccErrorStatus,
                               nvmlDeviceGetMemoryErrorCounter at SRAM, nvmlDeviceGetPlatformInfo
                               v1 and v2, and export-table slot 239 (GPU T.Limit Temp)
    probe_report.py misuse     the return codes of those calls given a bad version or NULL

Prints one JSON document. An NVML error is ["err", code].
"""

from __future__ import annotations

import ctypes
import json
import sys

import pynvml as n

SRAM_V1 = 0x01000068            # sizeof(nvmlEccSramErrorStatus_v1_t) | 1 << 24
PLATFORM_V1 = 0x0100002C        # sizeof(nvmlPlatformInfo_v1_t) | 1 << 24
PLATFORM_V2 = 0x0200002C
SMI_TABLE_ID = bytes.fromhex("c4fe3e6cc98f6c4ea327ee696e12f7c4")
SLOT = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 6)
FIELDS = (74, 75, 76, 251, 252, 253)
POLICIES = (0, 1, 2, 7)         # power, thermal, sync boost, and no policy at all
SRAM_NAMES = ("aggregateUncParity", "aggregateUncSecDed", "aggregateCor", "volatileUncParity",
              "volatileUncSecDed", "volatileCor", "aggregateUncBucketL2", "aggregateUncBucketSm",
              "aggregateUncBucketPcie", "aggregateUncBucketMcu", "aggregateUncBucketOther")


class SramStatus(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), *[(name, ctypes.c_ulonglong) for name in SRAM_NAMES],
                ("bThresholdExceeded", ctypes.c_uint)]


class PlatformV1(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("ibGuid", ctypes.c_ubyte * 16), ("rackGuid", ctypes.c_ubyte * 16),
                ("chassisPhysicalSlotNumber", ctypes.c_ubyte), ("computeSlotIndex", ctypes.c_ubyte),
                ("nodeIndex", ctypes.c_ubyte), ("peerType", ctypes.c_ubyte), ("moduleId", ctypes.c_ubyte)]


class PlatformV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("ibGuid", ctypes.c_ubyte * 16),
                ("chassisSerialNumber", ctypes.c_ubyte * 16), ("slotNumber", ctypes.c_ubyte),
                ("trayIndex", ctypes.c_ubyte), ("hostId", ctypes.c_ubyte), ("peerType", ctypes.c_ubyte),
                ("moduleId", ctypes.c_ubyte)]


class ViolationTime(ctypes.Structure):
    _fields_ = [("referenceTime", ctypes.c_ulonglong), ("violationTime", ctypes.c_ulonglong)]


assert ctypes.sizeof(SramStatus) == SRAM_V1 & 0xFFFFFF
assert ctypes.sizeof(PlatformV1) == ctypes.sizeof(PlatformV2) == PLATFORM_V1 & 0xFFFFFF


def lib():
    return n.nvmlLib


def fields(h):
    """[[valueType, value] or ["err", code]] for FIELDS."""
    out = []
    for fv in n.nvmlDeviceGetFieldValues(h, list(FIELDS)):
        if fv.nvmlReturn:
            out.append(["err", fv.nvmlReturn])
        elif fv.valueType == n.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
            out.append([fv.valueType, fv.value.ullVal])
        else:
            out.append([fv.valueType, fv.value.uiVal])
    return out


def violations(h):
    out = []
    for policy in POLICIES:
        t = ViolationTime()
        ret = lib().nvmlDeviceGetViolationStatus(h, ctypes.c_int(policy), ctypes.byref(t))
        out.append(["err", ret] if ret else t.violationTime)
    return out


def sram(h):
    s = SramStatus(version=SRAM_V1)
    ret = lib().nvmlDeviceGetSramEccErrorStatus(h, ctypes.byref(s))
    if ret:
        return ["err", ret]
    return {"version": s.version, **{name: getattr(s, name) for name in SRAM_NAMES},
            "bThresholdExceeded": s.bThresholdExceeded}


def sram_counters(h):
    """[[corrected volatile, corrected aggregate], [uncorrected volatile, uncorrected aggregate]]."""
    out = []
    for kind in (0, 1):
        row = []
        for scope in (0, 1):
            count = ctypes.c_ulonglong()
            ret = lib().nvmlDeviceGetMemoryErrorCounter(h, kind, scope, 7, ctypes.byref(count))
            row.append(["err", ret] if ret else count.value)
        out.append(row)
    return out


def platform(h, struct, version):
    info = struct(version=version)
    ctypes.memset(ctypes.addressof(info) + 4, 0xA5, ctypes.sizeof(info) - 4)   # every byte must be written
    ret = lib().nvmlDeviceGetPlatformInfo(h, ctypes.byref(info))
    if ret:
        return ["err", ret]
    return {name: bytes(getattr(info, name)).hex() if isinstance(getattr(info, name), ctypes.Array)
            else getattr(info, name) for name, _ in struct._fields_}


def slot(k):
    table = ctypes.c_void_p()
    assert lib().nvmlInternalGetExportTable(ctypes.byref(table), ctypes.c_char_p(SMI_TABLE_ID)) == 0
    return SLOT(ctypes.cast(table, ctypes.POINTER(ctypes.c_void_p))[1 + k])


def tlimit(h):
    margin = ctypes.c_int(-12345)
    ret = slot(239)(ctypes.cast(h, ctypes.c_void_p), ctypes.addressof(margin), 1, None, None, None)
    return ["err", ret] if ret else margin.value


def values():
    n.nvmlInit()
    gpus = []
    for i in range(n.nvmlDeviceGetCount()):
        h = n.nvmlDeviceGetHandleByIndex(i)
        gpus.append({"fields": fields(h), "violations": violations(h), "sram": sram(h),
                     "sram_counters": sram_counters(h), "platform_v1": platform(h, PlatformV1, PLATFORM_V1),
                     "platform_v2": platform(h, PlatformV2, PLATFORM_V2), "tlimit": tlimit(h)})
    n.nvmlShutdown()
    return gpus


def misuse():
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    L = lib()
    out = {}
    for name, version in (("sram v0", 0), ("sram v2", 0x02000068), ("sram short", 0x01000060)):
        out[name] = L.nvmlDeviceGetSramEccErrorStatus(h, ctypes.byref(SramStatus(version=version)))
    out["sram null"] = L.nvmlDeviceGetSramEccErrorStatus(h, None)
    out["sram bad handle"] = L.nvmlDeviceGetSramEccErrorStatus(ctypes.c_void_p(16),
                                                               ctypes.byref(SramStatus(version=SRAM_V1)))
    for name, version in (("platform v0", 0), ("platform v3", 0x0300002C), ("platform long", 0x02000030)):
        out[name] = L.nvmlDeviceGetPlatformInfo(h, ctypes.byref(PlatformV2(version=version)))
    out["platform null"] = L.nvmlDeviceGetPlatformInfo(h, None)
    out["violation null"] = L.nvmlDeviceGetViolationStatus(h, 0, None)
    out["tlimit null"] = slot(239)(ctypes.cast(h, ctypes.c_void_p), None, None, None, None, None)
    n.nvmlShutdown()
    out["sram after shutdown"] = L.nvmlDeviceGetSramEccErrorStatus(h, ctypes.byref(SramStatus(version=SRAM_V1)))
    out["platform after shutdown"] = L.nvmlDeviceGetPlatformInfo(h, ctypes.byref(PlatformV2(version=PLATFORM_V2)))
    return out


def main(argv):
    print(json.dumps({"values": values, "misuse": misuse}[argv[1]]()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
