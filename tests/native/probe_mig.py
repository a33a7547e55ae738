"""Runs inside a process that loads the mock libnvidia-ml.so.1: MIG through pynvml.

    probe_mig.py state                  every GPU's MIG mode, GPU instances (profile, placement),
                                        compute instances, and MIG devices (index, UUID, name,
                                        ids, memory, attributes, parent UUID, UUID lookup)
    probe_mig.py create GPU PROFILE_ID  a GPU instance and its default compute instance
    probe_mig.py churn GPU THREADS ROUNDS SECONDS
                                        THREADS threads, each ROUNDS times (or until SECONDS pass):
                                        create a 1g GPU instance and a compute instance in it, then
                                        destroy both; every return code and id, per thread
    probe_mig.py errors GPU             the return codes of MIG's error paths

Prints one JSON document. An NVML error is ["err", code].
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time

import pynvml as n

ONE_SLICE = 19                   # the 1g profile's ID on every MIG board of the facts


def call(fn, *args):
    try:
        return fn(*args)
    except n.NVMLError as exc:
        return ["err", exc.value]


def code(fn, *args) -> int:
    try:
        fn(*args)
    except n.NVMLError as exc:
        return exc.value
    return 0


def attributes(h):
    a = call(n.nvmlDeviceGetAttributes_v2, h)
    if isinstance(a, list):
        return a
    return [a.multiprocessorCount, a.sharedCopyEngineCount, a.sharedDecoderCount, a.sharedEncoderCount,
            a.sharedJpegCount, a.sharedOfaCount, a.gpuInstanceSliceCount, a.computeInstanceSliceCount,
            a.memorySizeMB]


def mig_device(parent, index):
    h = call(n.nvmlDeviceGetMigDeviceHandleByIndex, parent, index)
    if isinstance(h, list):
        return None if h[1] in (n.NVML_ERROR_NOT_FOUND, n.NVML_ERROR_INVALID_ARGUMENT) else h
    uuid = n.nvmlDeviceGetUUID(h)
    again = n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByUUID(uuid))
    mem = n.nvmlDeviceGetMemoryInfo(h)
    return {"index": index, "uuid": uuid, "by_uuid": again, "name": n.nvmlDeviceGetName(h),
            "gi": n.nvmlDeviceGetGpuInstanceId(h), "ci": n.nvmlDeviceGetComputeInstanceId(h),
            "is_mig": n.nvmlDeviceIsMigDeviceHandle(h).value, "memory": [mem.total, mem.free, mem.used],
            "attributes": attributes(h), "bus_id": n.nvmlDeviceGetPciInfo(h).busId,
            "parent": n.nvmlDeviceGetUUID(n.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(h)),
            "temperature": call(n.nvmlDeviceGetTemperature, h, 0)}


def gpu_instances(h):
    out = []
    for index in range(n.NVML_GPU_INSTANCE_PROFILE_COUNT):
        info = call(n.nvmlDeviceGetGpuInstanceProfileInfo, h, index)
        if isinstance(info, list):
            continue
        handles = (n.c_nvmlGpuInstance_t * info.instanceCount)()
        count = ctypes.c_uint(0)
        n.nvmlDeviceGetGpuInstances(h, info.id, handles, ctypes.byref(count))
        for gi in handles[:count.value]:
            gi_info = n.nvmlGpuInstanceGetInfo(gi)
            cis = []
            for ci_index in range(n.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
                ci_profile = call(n.nvmlGpuInstanceGetComputeInstanceProfileInfo, gi, ci_index, 0)
                if isinstance(ci_profile, list):
                    continue
                ci_handles = (n.c_nvmlComputeInstance_t * ci_profile.instanceCount)()
                ci_count = ctypes.c_uint(0)
                n.nvmlGpuInstanceGetComputeInstances(gi, ci_profile.id, ci_handles, ctypes.byref(ci_count))
                for ci in ci_handles[:ci_count.value]:
                    ci_info = n.nvmlComputeInstanceGetInfo(ci)
                    cis.append([ci_info.id, ci_info.profileId, ci_info.placement.start, ci_info.placement.size])
            out.append({"id": gi_info.id, "profile": gi_info.profileId,
                        "placement": [gi_info.placement.start, gi_info.placement.size], "cis": sorted(cis)})
    return sorted(out, key=lambda gi: gi["id"])


def state():
    n.nvmlInit()
    gpus = []
    for i in range(n.nvmlDeviceGetCount()):
        h = n.nvmlDeviceGetHandleByIndex(i)
        mode = call(n.nvmlDeviceGetMigMode, h)
        gpu = {"uuid": n.nvmlDeviceGetUUID(h), "mode": mode}
        if not isinstance(mode, list) or mode[:1] != ["err"]:
            if mode[0] == n.NVML_DEVICE_MIG_ENABLE:
                gpu["gpu_instances"] = gpu_instances(h)
            count = n.nvmlDeviceGetMaxMigDeviceCount(h)
            gpu["devices"] = [d for d in (mig_device(h, k) for k in range(count)) if d is not None]
        gpus.append(gpu)
    n.nvmlShutdown()
    return {"gpus": gpus}


def create(gpu: int, profile_id: int):
    """What ``mig -cgi PROFILE -C`` does: the instance and its default compute instance."""
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(gpu)
    gi = call(n.nvmlDeviceCreateGpuInstance, h, profile_id)
    if isinstance(gi, list):
        return {"gi": gi}
    info = n.nvmlGpuInstanceGetInfo(gi)
    slices = next(p.sliceCount for p in (call(n.nvmlDeviceGetGpuInstanceProfileInfo, h, k)
                                         for k in range(n.NVML_GPU_INSTANCE_PROFILE_COUNT))
                  if not isinstance(p, list) and p.id == profile_id)
    whole = next(p for p in (call(n.nvmlGpuInstanceGetComputeInstanceProfileInfo, gi, k, 0)
                             for k in range(n.NVML_COMPUTE_INSTANCE_PROFILE_COUNT))
                 if not isinstance(p, list) and p.sliceCount == slices)
    ci = n.nvmlGpuInstanceCreateComputeInstance(gi, whole.id)
    out = {"gi": info.id, "ci": n.nvmlComputeInstanceGetInfo(ci).id}
    n.nvmlShutdown()
    return out


def churn(gpu: int, threads: int, rounds: int, seconds: float):
    """Each thread pairs every create with its own destroy: a destroy that fails means another
    process's change was lost or an id was handed out twice."""
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(gpu)
    deadline = time.monotonic() + seconds
    results = [None] * threads

    def worker(k: int):
        log = {"created": 0, "destroyed": 0, "busy": 0, "bad": []}
        for _ in range(rounds):
            if time.monotonic() > deadline:
                break
            try:
                gi = n.nvmlDeviceCreateGpuInstance(h, ONE_SLICE)
            except n.NVMLError as exc:
                if exc.value == n.NVML_ERROR_INSUFFICIENT_RESOURCES:
                    log["busy"] += 1              # the other threads hold every slice
                else:
                    log["bad"].append(["create gi", exc.value])
                continue
            gi_id = n.nvmlGpuInstanceGetInfo(gi).id
            ci = call(n.nvmlGpuInstanceCreateComputeInstance, gi, 0)
            log["created"] += 1
            if isinstance(ci, list):
                log["bad"].append(["create ci", gi_id, ci[1]])
            elif (rc := code(n.nvmlComputeInstanceDestroy, ci)) != 0:
                log["bad"].append(["destroy ci", gi_id, rc])
            if (rc := code(n.nvmlGpuInstanceDestroy, gi)) != 0:
                log["bad"].append(["destroy gi", gi_id, rc])
            else:
                log["destroyed"] += 1
        results[k] = log

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    n.nvmlShutdown()
    return {"threads": results}


def errors(gpu: int):
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(gpu)
    out = {"profile index past NVML's": code(n.nvmlDeviceGetGpuInstanceProfileInfo, h, 0x11),
           "unknown profile ID": code(n.nvmlDeviceCreateGpuInstance, h, 77),
           "destroy a GPU instance with a compute instance": None,
           "disable MIG with instances": None}
    gi = n.nvmlDeviceCreateGpuInstance(h, ONE_SLICE)
    ci = n.nvmlGpuInstanceCreateComputeInstance(gi, 0)
    out["destroy a GPU instance with a compute instance"] = code(n.nvmlGpuInstanceDestroy, gi)
    status = ctypes.c_int(0)
    out["disable MIG with instances"] = n.nvmlLib.nvmlDeviceSetMigMode(h, 0, ctypes.byref(status))
    mig = n.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
    out["a GPU-only query of a MIG device"] = code(n.nvmlDeviceGetTemperature, mig, 0)
    n.nvmlComputeInstanceDestroy(ci)
    out["the destroyed MIG device's handle"] = code(n.nvmlDeviceGetUUID, mig)
    out["destroy the GPU instance"] = code(n.nvmlGpuInstanceDestroy, gi)
    out["the destroyed GPU instance's handle"] = code(n.nvmlGpuInstanceGetInfo, gi)
    placement = n.c_nvmlGpuInstancePlacement_t(3, 4)
    out["a placement the profile does not have"] = code(
        n.nvmlDeviceCreateGpuInstanceWithPlacement, h, 9, ctypes.byref(placement))
    n.nvmlShutdown()
    return out


def main(argv: list[str]) -> int:
    cmd = argv[1]
    if cmd == "state":
        out = state()
    elif cmd == "create":
        out = create(int(argv[2]), int(argv[3]))
    elif cmd == "churn":
        out = churn(int(argv[2]), int(argv[3]), int(argv[4]), float(argv[5]))
    elif cmd == "errors":
        out = errors(int(argv[2]))
    else:
        raise SystemExit(f"unknown probe {cmd}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
