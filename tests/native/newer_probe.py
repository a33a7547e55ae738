"""Runs inside a process that loads the mock libnvidia-ml.so.1: the NVML calls newer than the
pinned nvml.h (native/nvml/api/nvml_newer.h), through ctypes with NVIDIA's layouts.

    newer_probe.py margin INDEX [VERSION]   [rc, margin, temperature] of GPU INDEX (VERSION: the
                                            struct's version word, default nvmlMarginTemperature_v1)
    newer_probe.py margin-mig INDEX         the rc for GPU INDEX's first MIG device
    newer_probe.py unrepairable INDEX       [rc, flag] by DCGM's name, then by the _v1 name
    newer_probe.py blackwell INDEX          name -> [rc with a good argument, rc with NULL,
                                            rc with a wrong version (null when unversioned)]
    newer_probe.py system-events            what a system event set's life answers (below)

Prints one JSON document.
"""

from __future__ import annotations

import ctypes as C
import json
import sys
import threading
import time

L = C.CDLL("libnvidia-ml.so.1")


def version(struct, v: int = 1) -> int:
    return C.sizeof(struct) | v << 24


class Margin(C.Structure):
    _fields_ = [("version", C.c_uint), ("marginTemperature", C.c_int)]


class CreateRequest(C.Structure):
    _fields_ = [("version", C.c_uint), ("set", C.c_void_p)]


FreeRequest = CreateRequest


class RegisterRequest(C.Structure):
    _fields_ = [("version", C.c_uint), ("eventTypes", C.c_ulonglong), ("set", C.c_void_p)]


class EventData(C.Structure):
    _fields_ = [("eventType", C.c_ulonglong), ("gpuId", C.c_uint)]


class WaitRequest(C.Structure):
    _fields_ = [("version", C.c_uint), ("timeoutms", C.c_uint), ("set", C.c_void_p),
                ("data", C.POINTER(EventData)), ("dataSize", C.c_uint), ("numEvent", C.c_uint)]


class Mask255(C.Structure):
    _fields_ = [("mask", C.c_uint * 8)]


class ProfileInfo(C.Structure):
    _fields_ = [("version", C.c_uint), ("profileId", C.c_uint), ("priority", C.c_uint),
                ("conflictingMask", Mask255)]


class ProfilesInfo(C.Structure):
    _fields_ = [("version", C.c_uint), ("perfProfilesMask", Mask255), ("perfProfile", ProfileInfo * 255)]


class CurrentProfiles(C.Structure):
    _fields_ = [("version", C.c_uint), ("perfProfilesMask", Mask255), ("requestedProfilesMask", Mask255),
                ("enforcedProfilesMask", Mask255)]


class RequestedProfiles(C.Structure):
    _fields_ = [("version", C.c_uint), ("requestedProfilesMask", Mask255)]


class UpdateProfiles(C.Structure):
    _fields_ = [("operation", C.c_uint), ("updateProfilesMask", Mask255)]


class PrmTlv(C.Structure):
    _fields_ = [("dataSize", C.c_uint), ("status", C.c_uint), ("data", C.c_ubyte * 496)]


class PrmCounterList(C.Structure):
    _fields_ = [("numCounters", C.c_uint), ("counters", C.c_void_p)]


def device(index: int) -> C.c_void_p:
    h = C.c_void_p()
    assert L.nvmlDeviceGetHandleByIndex_v2(index, C.byref(h)) == 0
    return h


def margin(index: int, word: int | None = None) -> list:
    h = device(index)
    m = Margin(version=version(Margin) if word is None else word, marginTemperature=-999)
    rc = L.nvmlDeviceGetMarginTemperature(h, C.byref(m))
    temp = C.c_uint()
    L.nvmlDeviceGetTemperature(h, 0, C.byref(temp))
    return [rc, m.marginTemperature, temp.value]


def margin_mig(index: int) -> int:
    mig = C.c_void_p()
    assert L.nvmlDeviceGetMigDeviceHandleByIndex(device(index), 0, C.byref(mig)) == 0
    m = Margin(version=version(Margin))
    return L.nvmlDeviceGetMarginTemperature(mig, C.byref(m))


def unrepairable(index: int) -> list:
    out = []
    for name in ("nvmlDeviceGetUnrepairableMemoryFlag", "nvmlDeviceGetUnrepairableMemoryFlag_v1"):
        flag = C.c_uint(9)
        out += [getattr(L, name)(device(index), C.byref(flag)), flag.value]
    return out


BLACKWELL = {   # name -> (struct, versioned)
    "nvmlDeviceWorkloadPowerProfileGetProfilesInfo": (ProfilesInfo, True),
    "nvmlDeviceWorkloadPowerProfileGetCurrentProfiles": (CurrentProfiles, True),
    "nvmlDeviceWorkloadPowerProfileSetRequestedProfiles": (RequestedProfiles, True),
    "nvmlDeviceWorkloadPowerProfileClearRequestedProfiles": (RequestedProfiles, True),
    "nvmlDeviceWorkloadPowerProfileUpdateProfiles_v1": (UpdateProfiles, False),
    "nvmlDeviceReadWritePRM_v1": (PrmTlv, False),
    "nvmlDeviceReadPRMCounters_v1": (PrmCounterList, False),
}


def blackwell(index: int) -> dict:
    h, out = device(index), {}
    for name, (struct, versioned) in BLACKWELL.items():
        fn = getattr(L, name)
        good = struct()
        if versioned:
            good.version = version(struct)
        wrong = None
        if versioned:
            bad = struct()
            bad.version = version(struct, 2)
            wrong = fn(h, C.byref(bad))
        out[name] = [fn(h, C.byref(good)), fn(h, None), wrong]
    return out


def create() -> tuple[int, int]:
    req = CreateRequest(version=version(CreateRequest))
    rc = L.nvmlSystemEventSetCreate(C.byref(req))
    return rc, req.set


def register(live: int, types: int) -> int:
    return L.nvmlSystemRegisterEvents(C.byref(RegisterRequest(version=version(RegisterRequest), eventTypes=types,
                                                              set=live)))


def wait(live: int, timeoutms: int) -> list:
    data = (EventData * 4)()
    req = WaitRequest(version=version(WaitRequest), timeoutms=timeoutms, set=live, data=data, dataSize=4,
                      numEvent=7)
    return [L.nvmlSystemEventSetWait(C.byref(req)), req.numEvent]


def free(live: int) -> int:
    return L.nvmlSystemEventSetFree(C.byref(FreeRequest(version=version(FreeRequest), set=live)))


def system_events() -> dict:
    out = {}
    rc, live = create()
    out["create"] = [rc, live is not None]
    out["register"] = register(live, 3)                 # driver unbind and bind
    out["register_unknown_type"] = register(live, 4)
    out["wait_0ms"] = wait(live, 0)
    out["wait_50ms"] = wait(live, 50)
    # A wait of ten minutes ends when its set is freed.
    result = []
    waiter = threading.Thread(target=lambda: result.append(wait(live, 600000)))
    waiter.start()
    time.sleep(1)                                       # the waiter is asleep in the library by then
    out["free"] = free(live)
    waiter.join()
    out["wait_ended_by_free"] = result[0]
    out["free_again"] = free(live)
    out["wait_freed"] = wait(live, 0)
    out["register_freed"] = register(live, 1)
    out["create_null"] = L.nvmlSystemEventSetCreate(None)
    out["create_wrong_version"] = L.nvmlSystemEventSetCreate(C.byref(CreateRequest(version=version(CreateRequest, 2))))
    _, other = create()
    out["wait_wrong_version"] = L.nvmlSystemEventSetWait(C.byref(WaitRequest(version=1, set=other)))
    out["wait_no_buffer"] = L.nvmlSystemEventSetWait(C.byref(WaitRequest(version=version(WaitRequest), set=other,
                                                                         dataSize=4)))
    out["free_other"] = free(other)
    return out


def main(argv: list[str]) -> None:
    what = argv[0]
    uninitialized = create()[0] if what == "system-events" else None
    assert L.nvmlInit_v2() == 0
    if what == "margin":
        out = margin(int(argv[1]), int(argv[2]) if len(argv) > 2 else None)
    elif what == "margin-mig":
        out = margin_mig(int(argv[1]))
    elif what == "unrepairable":
        out = unrepairable(int(argv[1]))
    elif what == "blackwell":
        out = blackwell(int(argv[1]))
    else:
        out = {**system_events(), "create_before_init": uninitialized}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
