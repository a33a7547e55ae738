"""Runs inside a process that loads the mock libnvidia-ml.so.1 (LD_LIBRARY_PATH).

    probe.py visible            the visible GPUs: uuid, index, minor, name, fabric, readings
                                (temperature, power draw, utilization gpu and memory), memory
                                (v1 [total, free, used], v2 [total, reserved, free, used])
    probe.py dump               every query the state answers, per GPU, via pynvml
    probe.py errors             return codes of the error paths
    probe.py watch INDEX NAME   print each new name of GPU INDEX until it is NAME
    probe.py threads N ROUNDS   N threads init/query/shutdown; prints what each saw
    probe.py xid COUNT          register Xid events on every GPU, print "ready", then one
                                line per event from nvmlEventSetWait_v2 until COUNT came
    probe.py reset INDEX...     what NVIDIA's nvidia-smi -r calls in the export table: slot 19
                                (is primary) per GPU, 168 (mode), 181 and 182 (the group), then
                                167 (the reset) with the GPUs' handles; the return codes
    probe.py survey             "ready" once the library is loaded, then what a monitor asks:
                                dump's queries of every GPU, P2P and topology sets, process
                                names, an Xid wait; never raises (a query that fails is its
                                error or its exception's name)
    probe.py serve              a consumer per request: reads one JSON request a line
                                ({"env", "stdout", "stderr", "timeout"}), forks a
                                fresh process that sets env, runs survey (loading the library
                                itself) into those files and exits; prints one JSON line a
                                request: {"exit": status or null past the timeout, "max_rss"}.
                                This process never loads the library: each child is a
                                consumer's first load, without an interpreter's start each

Prints one JSON document (watch: one line per change). An NVML error is
["err", code]. pynvml's own fabric struct (12.550.89) has a 80-byte UUID and is
passed by value, so the fabric query goes through ctypes with nvml.h's layout.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import threading
import time
import traceback

import pynvml as n

FABRIC_V2 = 0x02000024          # sizeof(nvmlGpuFabricInfo_v2_t) | 2 << 24
MEMORY_V2 = 0x02000028          # sizeof(nvmlMemory_v2_t) | 2 << 24
PCI_EXT_V1 = 0x01000040         # sizeof(nvmlPciInfoExt_v1_t) | 1 << 24
REPAIR_STATUS_V1 = 0x0100000C   # sizeof(nvmlRepairStatus_v1_t) | 1 << 24
STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}


class FabricInfoV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_ubyte * 16), ("status", ctypes.c_int),
                ("cliqueId", ctypes.c_uint), ("state", ctypes.c_ubyte), ("healthMask", ctypes.c_uint)]


class MemoryV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class PciInfoExt(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("baseClass", ctypes.c_uint), ("subClass", ctypes.c_uint), ("busId", ctypes.c_char * 32)]


assert ctypes.sizeof(FabricInfoV2) == FABRIC_V2 & 0xFFFFFF
assert ctypes.sizeof(MemoryV2) == MEMORY_V2 & 0xFFFFFF
assert ctypes.sizeof(PciInfoExt) == PCI_EXT_V1 & 0xFFFFFF


def call(fn, *args):
    try:
        value = fn(*args)
    except n.NVMLError as exc:
        return ["err", exc.value]
    return plain(value)


def plain(value):
    """JSON-able: ctypes scalars to ints, tuples to lists."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple, ctypes.Array)):
        return [plain(v) for v in value]
    if hasattr(value, "value") and not isinstance(value, (int, str)):
        return plain(value.value)
    return value


def lib():
    return n.nvmlLib


def fabric(h):
    info = FabricInfoV2(version=FABRIC_V2)
    ret = lib().nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(info))
    if ret:
        return ["err", ret]
    raw = bytes(info.clusterUuid).hex()
    uuid = f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"
    return [STATES[info.state], info.cliqueId, uuid, info.status, info.healthMask]


def visible():
    try:
        n.nvmlInit()
    except n.NVMLError as exc:
        return {"init": exc.value}
    gpus = []
    for i in range(n.nvmlDeviceGetCount()):
        h = n.nvmlDeviceGetHandleByIndex(i)
        gpus.append({"uuid": n.nvmlDeviceGetUUID(h), "index": n.nvmlDeviceGetIndex(h),
                     "minor": n.nvmlDeviceGetMinorNumber(h), "name": n.nvmlDeviceGetName(h),
                     "fabric": fabric(h), "readings": readings(h), "memory": memory(h)})
    n.nvmlShutdown()
    return {"init": 0, "gpus": gpus}


def readings(h):
    """[temperature C, power draw mW, utilization.gpu, utilization.memory]: what moves."""
    util = call(n.nvmlDeviceGetUtilizationRates, h)
    util = util if isinstance(util, list) else [util.gpu, util.memory]
    return [call(n.nvmlDeviceGetTemperature, h, 0), call(n.nvmlDeviceGetPowerUsage, h), *util]


def memory(h):
    """{"v1": [total, free, used], "v2": [total, reserved, free, used]} in bytes."""
    v1 = call(n.nvmlDeviceGetMemoryInfo, h)
    return {"v1": v1 if isinstance(v1, list) else [v1.total, v1.free, v1.used], "v2": memory_v2(h)}


def fields(h, ids):
    out = []
    for fv in n.nvmlDeviceGetFieldValues(h, ids):
        if fv.nvmlReturn:
            out.append(["err", fv.nvmlReturn])
        elif fv.valueType == n.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
            out.append(fv.value.ullVal)
        elif fv.valueType == n.NVML_VALUE_TYPE_SIGNED_INT:
            out.append(fv.value.siVal)
        else:
            out.append(fv.value.uiVal)
    return out


def memory_v2(h):
    mem = MemoryV2(version=MEMORY_V2)
    ret = lib().nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(mem))
    return ["err", ret] if ret else [mem.total, mem.reserved, mem.free, mem.used]


def pci_ext(h):
    pci = PciInfoExt(version=PCI_EXT_V1)
    ret = lib().nvmlDeviceGetPciInfoExt(h, ctypes.byref(pci))
    return ["err", ret] if ret else [pci.busId.decode(), pci.domain, pci.bus, pci.device, pci.pciDeviceId,
                                     pci.pciSubSystemId, pci.baseClass, pci.subClass]


def gpu_dump(h):
    d = {}
    q = lambda name, fn, *a: d.__setitem__(name, call(fn, h, *a))   # noqa: E731
    for name in ("Name", "UUID", "Serial", "Index", "MinorNumber", "Brand", "Architecture",
                 "CudaComputeCapability", "BoardId", "BoardPartNumber", "VbiosVersion", "InforomImageVersion",
                 "MaxPcieLinkGeneration", "MaxPcieLinkWidth", "CurrPcieLinkGeneration", "CurrPcieLinkWidth",
                 "PcieReplayCounter", "PowerUsage", "PowerManagementLimit", "EnforcedPowerLimit",
                 "PowerManagementDefaultLimit", "PowerManagementLimitConstraints", "TotalEnergyConsumption",
                 "PerformanceState", "PowerState", "ComputeMode", "PersistenceMode", "EccMode", "DefaultEccMode",
                 "DisplayMode", "DisplayActive", "MigMode", "MaxMigDeviceCount", "NumaNodeId", "NumFans",
                 "FanSpeed", "EncoderUtilization", "DecoderUtilization", "EncoderStats", "NumGpuCores",
                 "MemoryBusWidth", "AccountingMode", "AccountingBufferSize", "GpuOperationMode",
                 "VirtualizationMode", "CurrentClocksEventReasons", "SupportedClocksEventReasons",
                 "SupportedMemoryClocks", "MultiGpuBoard",
                 "RemappedRows", "IsMigDeviceHandle", "GpuMaxPcieLinkGeneration"):
        q(name, getattr(n, "nvmlDevice" + "Get" * (not name.startswith("Is")) + name))
    module = ctypes.c_uint()
    ret = lib().nvmlDeviceGetModuleId(h, ctypes.byref(module))
    d["ModuleId"] = ["err", ret] if ret else module.value
    gsp = ctypes.create_string_buffer(64)
    ret = lib().nvmlDeviceGetGspFirmwareVersion(h, gsp)
    d["GspFirmwareVersion"] = ["err", ret] if ret else gsp.value.decode()
    on, default = ctypes.c_uint(), ctypes.c_uint()
    ret = lib().nvmlDeviceGetGspFirmwareMode(h, ctypes.byref(on), ctypes.byref(default))
    d["GspFirmwareMode"] = ["err", ret] if ret else [on.value, default.value]
    pci = call(n.nvmlDeviceGetPciInfo, h)
    d["PciInfo"] = pci if isinstance(pci, list) else [
        pci.busId, pci.busIdLegacy, pci.domain, pci.bus, pci.device, pci.pciDeviceId, pci.pciSubSystemId]
    d["PciInfoExt"] = pci_ext(h)
    repair = (ctypes.c_uint * 3)(REPAIR_STATUS_V1)
    ret = lib().nvmlDeviceGetRepairStatus(h, repair)
    d["RepairStatus"] = ["err", ret] if ret else [repair[1], repair[2]]
    for obj in range(3):
        d[f"InforomVersion{obj}"] = call(n.nvmlDeviceGetInforomVersion, h, obj)
    mem = call(n.nvmlDeviceGetMemoryInfo, h)
    d["MemoryInfo"] = mem if isinstance(mem, list) else [mem.total, mem.free, mem.used]
    d["MemoryInfo_v2"] = memory_v2(h)
    bar = call(n.nvmlDeviceGetBAR1MemoryInfo, h)
    d["BAR1MemoryInfo"] = bar if isinstance(bar, list) else [bar.bar1Total, bar.bar1Free, bar.bar1Used]
    util = call(n.nvmlDeviceGetUtilizationRates, h)
    d["UtilizationRates"] = util if isinstance(util, list) else [util.gpu, util.memory]
    d["Temperature"] = call(n.nvmlDeviceGetTemperature, h, 0)
    d["TemperatureThreshold"] = [call(n.nvmlDeviceGetTemperatureThreshold, h, t) for t in range(4)]
    for what, fn in (("ClockInfo", n.nvmlDeviceGetClockInfo), ("MaxClockInfo", n.nvmlDeviceGetMaxClockInfo),
                     ("ApplicationsClock", n.nvmlDeviceGetApplicationsClock),
                     ("DefaultApplicationsClock", n.nvmlDeviceGetDefaultApplicationsClock)):
        d[what] = [call(fn, h, t) for t in range(4)]
    d["Clock"] = [[call(n.nvmlDeviceGetClock, h, t, i) for i in range(4)] for t in range(4)]
    mems = d["SupportedMemoryClocks"]
    d["SupportedGraphicsClocks"] = [] if not isinstance(mems, list) or mems[:1] == ["err"] else [
        call(n.nvmlDeviceGetSupportedGraphicsClocks, h, m) for m in mems]
    d["TotalEccErrors"] = [[call(n.nvmlDeviceGetTotalEccErrors, h, e, c) for c in range(2)] for e in range(2)]
    d["ComputeRunningProcesses"] = [[p.pid, p.usedGpuMemory] for p in n.nvmlDeviceGetComputeRunningProcesses(h)]
    d["GraphicsRunningProcesses"] = [[p.pid, p.usedGpuMemory] for p in n.nvmlDeviceGetGraphicsRunningProcesses(h)]
    d["Fabric"] = fabric(h)
    links = fields(h, [91])[0]
    d["NvLinkCount"] = links
    d["NvLinks"] = []
    for link in range(links if isinstance(links, int) else 0):
        d["NvLinks"].append([call(n.nvmlDeviceGetNvLinkState, h, link),
                             call(n.nvmlDeviceGetNvLinkVersion, h, link),
                             call(n.nvmlDeviceGetNvLinkRemoteDeviceType, h, link),
                             call(lambda *a: n.nvmlDeviceGetNvLinkRemotePciInfo(*a).busId, h, link)]
                            + fields(h, [(164, link), (165, link)]))
    d["Fields"] = dict(zip(("82", "95", "185", "186", "187", "188", "189", "190", "192", "195", "226", "227"),
                           fields(h, [82, 95, 185, 186, 187, 188, 189, 190, 192, 195, 226, 227])))
    d["CpuAffinity"] = call(n.nvmlDeviceGetCpuAffinity, h, 4)
    return d


def dump():
    n.nvmlInit()
    out = {"DriverVersion": n.nvmlSystemGetDriverVersion(), "NVMLVersion": n.nvmlSystemGetNVMLVersion(),
           "CudaDriverVersion": n.nvmlSystemGetCudaDriverVersion(),
           "CudaDriverVersion_v2": n.nvmlSystemGetCudaDriverVersion_v2(), "gpus": []}
    count = n.nvmlDeviceGetCount()
    handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    for h in handles:
        out["gpus"].append(gpu_dump(h))
    out["CommonAncestor"] = [[call(n.nvmlDeviceGetTopologyCommonAncestor, a, b) for b in handles]
                             for a in handles]
    n.nvmlShutdown()
    return out


def watch(index, final):
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(index)
    last = n.nvmlDeviceGetName(h)
    print(json.dumps(["ready", last]), flush=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        name = n.nvmlDeviceGetName(h)
        if name != last:
            print(json.dumps(["name", name]), flush=True)
            last = name
            if name == final:
                break
        time.sleep(0.01)
    n.nvmlShutdown()


def threads(count, rounds):
    L = lib()
    results = [None] * count
    start = threading.Barrier(count)

    def worker(slot):
        seen = set()
        start.wait()
        for _ in range(rounds):
            assert L.nvmlInit_v2() == 0
            c = ctypes.c_uint()
            assert L.nvmlDeviceGetCount_v2(ctypes.byref(c)) == 0
            row = [c.value]
            for i in range(c.value):
                h = ctypes.c_void_p()
                assert L.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) == 0
                buf = ctypes.create_string_buffer(96)
                assert L.nvmlDeviceGetUUID(h, buf, 96) == 0
                mem = MemoryV2(version=MEMORY_V2)
                assert L.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(mem)) == 0
                info = FabricInfoV2(version=FABRIC_V2)
                ret = L.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(info))
                idx = ctypes.c_uint()
                assert L.nvmlDeviceGetIndex(h, ctypes.byref(idx)) == 0
                row.append((buf.value.decode(), idx.value, mem.total, mem.free, ret, info.state, info.cliqueId))
            assert L.nvmlShutdown() == 0
            seen.add(json.dumps(row))
        results[slot] = sorted(seen)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return {"results": results, "after": L.nvmlShutdown()}


def xid(count):
    n.nvmlInit()
    event_set = n.nvmlEventSetCreate()
    for i in range(n.nvmlDeviceGetCount()):
        n.nvmlDeviceRegisterEvents(n.nvmlDeviceGetHandleByIndex(i), n.nvmlEventTypeXidCriticalError, event_set)
    print(json.dumps(["ready"]), flush=True)
    deadline = time.monotonic() + 60
    got = 0
    while got < count and time.monotonic() < deadline:
        try:
            data = n.nvmlEventSetWait_v2(event_set, 500)
        except n.NVMLError_Timeout:
            continue
        got += 1
        print(json.dumps({"index": n.nvmlDeviceGetIndex(data.device), "type": data.eventType,
                          "xid": data.eventData, "gi": data.gpuInstanceId}), flush=True)
    n.nvmlEventSetFree(event_set)
    n.nvmlShutdown()


def errors():
    L = lib()
    out = {}
    c = ctypes.c_uint()
    out["count before init"] = L.nvmlDeviceGetCount_v2(ctypes.byref(c))
    out["shutdown before init"] = L.nvmlShutdown()
    out["init"] = L.nvmlInit_v2()
    out["init again"] = L.nvmlInitWithFlags(0)
    h = ctypes.c_void_p()
    out["handle 0"] = L.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
    out["handle 99"] = L.nvmlDeviceGetHandleByIndex_v2(99, ctypes.byref(h))
    out["count NULL"] = L.nvmlDeviceGetCount_v2(None)
    buf = ctypes.create_string_buffer(96)
    out["name NULL handle"] = L.nvmlDeviceGetName(None, buf, 96)
    out["name bogus handle"] = L.nvmlDeviceGetName(ctypes.c_void_p(16), buf, 96)
    out["name 4 bytes"] = L.nvmlDeviceGetName(h, buf, 4)
    out["name NULL buffer"] = L.nvmlDeviceGetName(h, None, 96)
    for label, version in (("memory v2 bare 2", 2), ("memory v2 0x2000028", MEMORY_V2), ("memory v2 v1 size", 0x1000028)):
        mem = MemoryV2(version=version)
        out[label] = L.nvmlDeviceGetMemoryInfo_v2(h, ctypes.byref(mem))
    for label, version in (("pci ext 0x1000040", PCI_EXT_V1), ("pci ext bare 1", 1)):
        pci = PciInfoExt(version=version)
        out[label] = L.nvmlDeviceGetPciInfoExt(h, ctypes.byref(pci))
    for label, version in (("fabric v2", FABRIC_V2), ("fabric bare 2", 2)):
        info = FabricInfoV2(version=version)
        out[label] = L.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(info))
    v = ctypes.create_string_buffer(80)
    out["driver version 3 bytes"] = L.nvmlSystemGetDriverVersion(v, 3)
    out["uuid 96 bytes"] = L.nvmlDeviceGetUUID(h, buf, 96)
    h2 = ctypes.c_void_p()
    out["by uuid"] = L.nvmlDeviceGetHandleByUUID(buf.value, ctypes.byref(h2))
    out["by uuid same"] = h2.value == h.value
    out["by uuid unknown"] = L.nvmlDeviceGetHandleByUUID(b"GPU-nope", ctypes.byref(h2))
    pci = ctypes.create_string_buffer(32)
    for label, bus in (("by bus id long", b"00000000:1A:00.0"), ("by bus id legacy", b"0000:1a:00.0"),
                       ("by bus id short", b"1a:00.0"), ("by bus id no function", b"0000:1A:00")):
        h2.value = None
        out[label] = [L.nvmlDeviceGetHandleByPciBusId_v2(bus, ctypes.byref(h2)), h2.value == h.value]
    out["by bus id garbage"] = L.nvmlDeviceGetHandleByPciBusId_v2(b"zz:00.0", ctypes.byref(h2))
    out["shutdown 1"] = L.nvmlShutdown()
    out["query after one shutdown"] = L.nvmlDeviceGetCount_v2(ctypes.byref(c))
    out["shutdown 2"] = L.nvmlShutdown()
    out["query after last shutdown"] = L.nvmlDeviceGetName(h, buf, 96)
    out["shutdown 3"] = L.nvmlShutdown()
    return out


def extra():
    """Processes from the state, the GPU set of a CPU, the GPUs near one."""
    n.nvmlInit()
    h = [n.nvmlDeviceGetHandleByIndex(i) for i in range(n.nvmlDeviceGetCount())]
    index = lambda hs: sorted(n.nvmlDeviceGetIndex(x) for x in hs)   # noqa: E731
    out = {
        "compute": [[p.pid, p.usedGpuMemory, p.gpuInstanceId] for p in n.nvmlDeviceGetComputeRunningProcesses(h[0])],
        "compute v1": [[p.pid, p.usedGpuMemory] for p in n.nvmlDeviceGetComputeRunningProcesses_v2(h[0])],
        "graphics": [p.pid for p in n.nvmlDeviceGetGraphicsRunningProcesses(h[0])],
        "mps": [p.pid for p in n.nvmlDeviceGetMPSComputeRunningProcesses(h[0])],
        "name 4242": call(n.nvmlSystemGetProcessName, 4242),
        "name 1": call(n.nvmlSystemGetProcessName, 1),
        "gpu set cpu 0": index(n.nvmlSystemGetTopologyGpuSet(0)),
        "gpu set cpu 60": index(n.nvmlSystemGetTopologyGpuSet(60)),
        "near 0 hostbridge": index(n.nvmlDeviceGetTopologyNearestGpus(h[0], 30)),
        "near 0 node": index(n.nvmlDeviceGetTopologyNearestGpus(h[0], 40)),
        "near 0 system": index(n.nvmlDeviceGetTopologyNearestGpus(h[0], 50)),
        "memory affinity 5": call(n.nvmlDeviceGetMemoryAffinity, h[5], 1, 0),
    }
    n.nvmlShutdown()
    return out


def guarded(fn, *args):
    """``call`` that also survives what a consumer's own code may raise on odd bytes."""
    try:
        return call(fn, *args)
    except Exception as exc:  # noqa: BLE001 - the survey reports, never stops
        return ["raised", type(exc).__name__]


def survey():
    try:
        n.nvmlInit()
    except n.NVMLError as exc:
        return {"init": exc.value}
    handles = []
    for i in range(n.nvmlDeviceGetCount()):
        h = guarded(n.nvmlDeviceGetHandleByIndex, i)
        if not isinstance(h, list):
            handles.append(h)
    out = {"init": 0, "gpus": [guarded(gpu_dump, h) for h in handles]}
    out["p2p"] = [[guarded(n.nvmlDeviceGetP2PStatus, a, b, n.NVML_P2P_CAPS_INDEX_NVLINK) for b in handles]
                  for a in handles]
    out["gpu set cpu 0"] = guarded(lambda: len(n.nvmlSystemGetTopologyGpuSet(0)))
    out["near"] = [guarded(lambda h=h: len(n.nvmlDeviceGetTopologyNearestGpus(h, 50))) for h in handles]
    out["process 1"] = guarded(n.nvmlSystemGetProcessName, 1)
    events = guarded(n.nvmlEventSetCreate)
    if not isinstance(events, list):
        for h in handles:
            guarded(n.nvmlDeviceRegisterEvents, h, n.nvmlEventTypeXidCriticalError, events)
        out["wait"] = guarded(lambda: n.nvmlEventSetWait_v2(events, 20).eventData)
        guarded(n.nvmlEventSetFree, events)
    n.nvmlShutdown()
    return out


SMI_TABLE_ID = bytes.fromhex("c4fe3e6cc98f6c4ea327ee696e12f7c4")
SLOT = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 6)


def reset(indices):
    n.nvmlInit()
    table = ctypes.c_void_p()
    ret = lib().nvmlInternalGetExportTable(ctypes.byref(table), ctypes.c_char_p(SMI_TABLE_ID))
    assert ret == 0, ret
    words = ctypes.cast(table, ctypes.POINTER(ctypes.c_void_p))

    def slot(k, *args):
        fn = SLOT(words[1 + k])                   # a size word, then the slots
        return fn(*[ctypes.c_void_p(a) if a is not None else None for a in args], *[None] * (6 - len(args)))

    handles = (ctypes.c_void_p * len(indices))()
    for k, i in enumerate(indices):
        h = ctypes.c_void_p()
        assert lib().nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(h)) == 0
        handles[k] = h
    word = ctypes.c_uint(7)
    out = {"primary": [], "primary_word": []}
    for h in handles:
        word.value = 7
        out["primary"].append(slot(19, h, ctypes.addressof(word)))
        out["primary_word"].append(word.value)
    word.value = 7
    out["mode"] = [slot(168, ctypes.addressof(word)), word.value]
    group = ctypes.c_void_p()
    out["group"] = [slot(181, ctypes.addressof(group), ctypes.addressof(handles), len(indices), 1),
                    slot(182, None, None, None, None)]
    out["reset"] = slot(167, len(indices), ctypes.addressof(handles))
    n.nvmlShutdown()
    return out


def serve_one(request):
    """One forked consumer of the survey; (exit status or None past the timeout, peak RSS bytes)."""
    pid = os.fork()
    if pid == 0:                                  # the consumer: its own files, env and library load
        try:
            for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            sys.stdout = os.fdopen(1, "w")
            os.environ.update(request["env"])
            print(json.dumps(survey()), flush=True)
            os._exit(0)
        except BaseException:                     # noqa: BLE001 - a child never returns into the server
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
    pidfd = os.pidfd_open(pid)
    ended = bool(select.select([pidfd], [], [], request["timeout"])[0])
    os.close(pidfd)
    if not ended:
        os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    return (os.waitstatus_to_exitcode(status) if ended else None), usage.ru_maxrss * 1024


def serve():
    for line in sys.stdin:
        status, max_rss = serve_one(json.loads(line))
        print(json.dumps({"exit": status, "max_rss": max_rss}), flush=True)


def main(argv):
    cmd = argv[1]
    if cmd == "visible":
        print(json.dumps(visible()))
    elif cmd == "dump":
        print(json.dumps(dump()))
    elif cmd == "errors":
        n.nvmlInit  # noqa: B018  (load happens in nvmlInit; errors() needs the library first)
        n._LoadNvmlLibrary()
        print(json.dumps(errors()))
    elif cmd == "init":
        try:
            n.nvmlInit()
            print(json.dumps({"init": 0, "count": n.nvmlDeviceGetCount()}))
        except n.NVMLError as exc:
            print(json.dumps({"init": exc.value}))
    elif cmd == "extra":
        print(json.dumps(extra()))
    elif cmd == "survey":
        n._LoadNvmlLibrary()                      # the interpreter's start is not the library's time
        print(json.dumps(["ready"]), flush=True)
        print(json.dumps(survey()))
    elif cmd == "serve":
        serve()
    elif cmd == "xid":
        xid(int(argv[2]))
    elif cmd == "reset":
        n._LoadNvmlLibrary()
        print(json.dumps(reset([int(a) for a in argv[2:]])))
    elif cmd == "watch":
        watch(int(argv[2]), argv[3])
    elif cmd == "threads":
        n._LoadNvmlLibrary()
        print(json.dumps(threads(int(argv[2]), int(argv[3]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
