"""One visible GPU as NVML reports it: the readings Mokka's nvidia-smi prints.

Every method is one NVML query (or a few that belong together) and returns
plain Python values, or None where NVML answers anything but success: that is
what nvidia-smi prints as N/A. Pure plumbing over mokka.engine.nvml; the words
nvidia-smi uses for the values are in mokka.smi.values.
"""

from __future__ import annotations

import ctypes as C

from mokka.core import names
from mokka.engine import nvml
from mokka.smi import values as v

ENABLED = 1

# nvml.h enums the readings take as arguments.
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM, CLOCK_VIDEO = 0, 1, 2, 3
THRESHOLD_SHUTDOWN, THRESHOLD_SLOWDOWN, THRESHOLD_MEM_MAX, THRESHOLD_GPU_MAX = 0, 1, 2, 3
THRESHOLD_ACOUSTIC_CURR = 5
CORRECTED, UNCORRECTED = 0, 1
VOLATILE, AGGREGATE = 0, 1
LOCATION_DEVICE_MEMORY, LOCATION_SRAM = 2, 7
RETIRE_MULTIPLE_SINGLE_BIT, RETIRE_DOUBLE_BIT = 0, 1
INFOROM_OEM, INFOROM_ECC, INFOROM_POWER = 0, 1, 2
PCIE_TX, PCIE_RX = 0, 1

# Field ids (nvmlDeviceGetFieldValues).
FI_MEMORY_TEMP = 82
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_GET_SPEED = 164
FI_NVLINK_GET_STATE = 165
#: NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, _RECOVERY, _CRC: a link's error counters, the link in scopeId.
FI_NVLINK_ERRORS = (161, 162, 163)
FI_TEMPERATURE_SHUTDOWN_TLIMIT = 193
FI_TEMPERATURE_SLOWDOWN_TLIMIT = 194
FI_TEMPERATURE_MEM_MAX_TLIMIT = 195
FI_TEMPERATURE_GPU_MAX_TLIMIT = 196
#: The export table slots NVIDIA's nvidia-smi reads rows from that NVML has no call for.
SLOT_TLIMIT_TEMP = 239
SLOT_HOST_MAX_PCIE_GEN = 229
SLOT_SPARSE_OPERATION_MODE = 248
SLOT_GPU_PART_NUMBER, GPU_PART_NUMBER_SIZE = 230, 0x50
SLOT_FRU_PART_NUMBER, FRU_PART_NUMBER_SIZE = 236, 0x14
#: nvmlDeviceGetFieldValues ids the 580 report reads beyond those above (NVML 13's numbers).
FI_RESET_STATUS, FI_DRAIN_AND_RESET_STATUS = 226, 227
FI_GPU_RECOVERY_ACTION = 230
FI_PCIE_OUTBOUND_ATOMICS, FI_PCIE_INBOUND_ATOMICS = 228, 229
FI_EDPP_MULTIPLIER = 274
FI_REMAPPED_ROWS_INACTIVE = (301, 302)
#: The power fields, by nvidia-smi's rows, and their scopes (scopeId).
FI_POWER = {"average_power_draw": 185, "instant_power_draw": 186, "current_power_limit": 190,
            "requested_power_limit": 192, "default_power_limit": 189, "min_power_limit": 187,
            "max_power_limit": 188}
POWER_SCOPE_GPU, POWER_SCOPE_MODULE, POWER_SCOPE_MEMORY = 0, 1, 2
CAP_EGM = 0x1
#: The clocks event reason counters (ns), by nvidia-smi's row: NVML 12.8's field ids.
FI_CLOCKS_EVENT_COUNTERS = {"sw_power_cap": 74, "sync_boost": 76, "sw_therm_slowdown": 251,
                            "hw_therm_slowdown": 252, "hw_power_brake": 253}

MAX_PROCESSES = 256
#: Asks for a process list that keeps growing, and the entries each asks for beyond the count.
PROCESS_ASKS, PROCESS_SLACK = 3, 16
MAX_PAGES = 512
MAX_CLOCKS = 512


def _types():
    """The NVML structs, defined on first use: building ctypes classes costs more than
    ``nvidia-smi -L`` needs to pay."""
    from mokka.engine import nvml_types
    return nvml_types


#: The readings that are one NVML call of one shape: method name -> nvmlDeviceGet<Name>.
#: Each becomes a method of Gpu (``gpu.temperature()`` style), None where NVML has no value.
U32_READINGS = {
    "minor_number": "MinorNumber", "board_id": "BoardId", "multi_gpu_board": "MultiGpuBoard",
    "module_id": "ModuleId", "brand": "Brand", "architecture": "Architecture",
    "display_mode": "DisplayMode", "display_active": "DisplayActive",
    "persistence_mode": "PersistenceMode", "accounting_mode": "AccountingMode",
    "accounting_buffer_size": "AccountingBufferSize", "virtualization_mode": "VirtualizationMode",
    "host_vgpu_mode": "HostVgpuMode", "compute_mode": "ComputeMode",
    "performance_state": "PerformanceState", "power_management_mode": "PowerManagementMode",
    "pcie_max_gen": "MaxPcieLinkGeneration", "pcie_device_max_gen": "GpuMaxPcieLinkGeneration",
    "pcie_current_gen": "CurrPcieLinkGeneration", "pcie_max_width": "MaxPcieLinkWidth",
    "pcie_current_width": "CurrPcieLinkWidth", "pcie_replay_counter": "PcieReplayCounter",
    "fan_count": "NumFans", "fan_speed": "FanSpeed", "retired_pages_pending": "RetiredPagesPendingStatus",
    "power_usage": "PowerUsage", "power_limit": "EnforcedPowerLimit",
    "power_requested_limit": "PowerManagementLimit", "power_default_limit": "PowerManagementDefaultLimit",
    "numa_node": "NumaNodeId",
}
U64_READINGS = {
    "clocks_event_reasons": "CurrentClocksEventReasons",
    "clocks_event_reasons_supported": "SupportedClocksEventReasons",
}
STRING_READINGS = {
    "name": "Name", "serial": "Serial", "vbios_version": "VbiosVersion",
    "board_part_number": "BoardPartNumber", "inforom_image": "InforomImageVersion",
}
#: Calls that fill two unsigned ints (current, pending; min, max): a tuple of two, or two Nones.
PAIR_READINGS = {
    "mig_mode": "MigMode", "driver_model": "DriverModel", "gpu_operation_mode": "GpuOperationMode",
    "ecc_mode": "EccMode", "power_limit_constraints": "PowerManagementLimitConstraints",
}


class Gpu:
    """Visible GPU ``index`` of a loaded mock library."""

    def __init__(self, lib: nvml.Library, index: int, handle: C.c_void_p):
        self.lib = lib
        self.index = index
        self.handle = handle

    # --- the shapes of most queries -------------------------------------------------

    def _ask(self, name: str, *args) -> bool:
        return self.lib.ask(name, self.handle, *args) == nvml.SUCCESS

    def _refusal(self, code: int):
        """None (N/A), or the error's text where nvidia-smi prints it (values.Refusal)."""
        return v.Refusal(self.lib.error_string(code)) if code in nvml.SHOWN_ERRORS else None

    def _u32(self, name: str, *before) -> int | None:
        out = C.c_uint(0)
        code = self.lib.ask(name, self.handle, *before, C.byref(out))
        return out.value if code == nvml.SUCCESS else self._refusal(code)

    def _u64(self, name: str, *before) -> int | None:
        out = C.c_ulonglong(0)
        return out.value if self._ask(name, *before, C.byref(out)) else None

    def _pair(self, name: str, ctype=C.c_uint) -> tuple:
        a, b = ctype(0), ctype(0)
        return (a.value, b.value) if self._ask(name, C.byref(a), C.byref(b)) else (None, None)

    def _string(self, name: str, size: int = nvml.STRING_SIZE) -> str | None:
        buf = C.create_string_buffer(size)
        return buf.value.decode(errors="replace") if self._ask(name, buf, C.c_uint(size)) else None

    def _struct(self, name: str, ctype, version: int | None = None):
        out = ctype()
        if version is not None:
            out.version = _types().struct_version(ctype, version)
        return out if self._ask(name, C.byref(out)) else None

    def fields(self, ids: list, scopes: list | None = None) -> list:
        """nvmlDeviceGetFieldValues: one value (or None) per (field id, scope id)."""
        values = (_types().FieldValue * len(ids))()
        for i, fid in enumerate(ids):
            values[i].fieldId = fid
            values[i].scopeId = scopes[i] if scopes else 0
        if not self._ask("nvmlDeviceGetFieldValues", C.c_int(len(ids)), values):
            return [None] * len(ids)
        return [_types().field_value(f) if f.nvmlReturn == nvml.SUCCESS else self._refusal(f.nvmlReturn)
                for f in values]

    # --- identity ---------------------------------------------------------------------

    def uuid(self):
        return self._string("nvmlDeviceGetUUID", nvml.UUID_SIZE)

    def compute_capability(self) -> tuple:
        return self._pair("nvmlDeviceGetCudaComputeCapability", C.c_int)

    def pci(self) -> "nvml_types.PciInfo | None":
        return self._struct("nvmlDeviceGetPciInfo_v3", _types().PciInfo)

    def pci_ext(self) -> "nvml_types.PciInfoExt | None":
        return self._struct("nvmlDeviceGetPciInfoExt", _types().PciInfoExt, 1)

    def bus_id(self) -> str:
        pci = self.pci()
        return pci.busId.decode() if pci else "N/A"

    def platform(self) -> "nvml_types.PlatformInfo | None":
        return self._struct("nvmlDeviceGetPlatformInfo", _types().PlatformInfo, 2)

    def inforom(self, obj: int):
        buf = C.create_string_buffer(nvml.STRING_SIZE)
        return buf.value.decode() if self._ask("nvmlDeviceGetInforomVersion", C.c_int(obj), buf,
                                               C.c_uint(nvml.STRING_SIZE)) else None

    def gsp_firmware_mode(self):
        return self._pair("nvmlDeviceGetGspFirmwareMode")[0]

    def gsp_firmware_version(self):
        buf = C.create_string_buffer(64)
        return buf.value.decode() if self._ask("nvmlDeviceGetGspFirmwareVersion", buf) else None

    def c2c_enabled(self):
        info = self._struct("nvmlDeviceGetC2cModeInfoV", _types().C2cMode)
        return None if info is None else info.enabled

    def pcie_throughput(self, counter: int):
        return self._u32("nvmlDeviceGetPcieThroughput", C.c_int(counter))

    def pcie_host_max_gen(self):
        """What NVIDIA's nvidia-smi prints as Host Max: its export table's slot 229."""
        out = C.c_uint(0)
        slot = self.lib.export_slot(SLOT_HOST_MAX_PCIE_GEN, C.c_void_p, C.c_void_p)
        return out.value if slot and slot(self.handle, C.byref(out)) == nvml.SUCCESS else None

    def part_number(self, slot_number: int, size: int):
        """GPU Part Number (SLOT_GPU_PART_NUMBER) or FRU Part Number: export table rows."""
        buf = C.create_string_buffer(size)
        slot = self.lib.export_slot(slot_number, C.c_void_p, C.c_void_p, C.c_uint)
        ok = slot and slot(self.handle, buf, C.c_uint(size)) == nvml.SUCCESS
        return buf.value.decode(errors="replace") if ok else None

    def sparse_operation_mode(self):
        """What NVIDIA's nvidia-smi prints as Sparse Operation Mode: its export table's slot 248."""
        out = C.c_uint(0)
        slot = self.lib.export_slot(SLOT_SPARSE_OPERATION_MODE, C.c_void_p, C.c_void_p, C.c_uint)
        return out.value if slot and slot(self.handle, C.byref(out), C.c_uint(1)) == nvml.SUCCESS else None

    def bbx_flush(self) -> tuple:
        """(microseconds since the epoch, duration in microseconds) of the InfoROM's last
        black-box flush, or (None, None)."""
        when, took = C.c_ulonglong(0), C.c_ulong(0)
        ok = self._ask("nvmlDeviceGetLastBBXFlushTime", C.byref(when), C.byref(took))
        return (when.value, took.value) if ok else (None, None)

    def accounted_pids(self) -> list | None:
        count = C.c_uint(MAX_PROCESSES)
        pids = (C.c_uint * MAX_PROCESSES)()
        if not self._ask("nvmlDeviceGetAccountingPids", C.byref(count), pids):
            return None
        return list(pids[:min(count.value, MAX_PROCESSES)])

    def accounted(self) -> list:
        """[(pid, GPU %, memory %, max memory bytes, time ms, running), ...] of the accounted
        processes whose stats NVML gives."""
        out = []
        for pid in self.accounted_pids() or []:
            stats = _types().AccountingStats()
            if self._ask("nvmlDeviceGetAccountingStats", C.c_uint(pid), C.byref(stats)):
                out.append((pid, stats.gpuUtilization, stats.memoryUtilization, stats.maxMemoryUsage, stats.time,
                            stats.isRunning))
        return out

    def pdi(self):
        out = self._struct("nvmlDeviceGetPdi", _types().Pdi, 1)
        return None if out is None else out.value

    def addressing_mode(self):
        out = self._struct("nvmlDeviceGetAddressingMode", _types().VersionedValue, 1)
        return None if out is None else out.value

    def capabilities(self):
        out = self._struct("nvmlDeviceGetCapabilities", _types().VersionedValue, 1)
        return None if out is None else out.value

    def repair_status(self) -> "nvml_types.RepairStatus | None":
        return self._struct("nvmlDeviceGetRepairStatus", _types().RepairStatus, 1)

    def unrepairable_memory(self):
        out = C.c_uint(0)
        return out.value if self._ask("nvmlDeviceGetUnrepairableMemoryFlag_v1", C.byref(out)) else None

    def cc_protected_memory(self) -> "nvml_types.Memory1 | None":
        return self._struct("nvmlDeviceGetConfComputeProtectedMemoryUsage", _types().Memory1)

    def max_customer_boost_clock(self, kind: int):
        return self._u32("nvmlDeviceGetMaxCustomerBoostClock", C.c_int(kind))

    def power_state(self):
        return self._u32("nvmlDeviceGetPowerState")

    def power_fields(self, scope: int) -> dict:
        """The power fields of a scope (POWER_SCOPE_*), by name, in nvidia-smi's row order."""
        ids = list(FI_POWER.values())
        return dict(zip(FI_POWER, self.fields(ids, [scope] * len(ids))))

    # --- the readings of more than one call, or of another shape -----------------------

    def clocks_event_counters(self) -> dict:
        ids = list(FI_CLOCKS_EVENT_COUNTERS.values())
        return dict(zip(FI_CLOCKS_EVENT_COUNTERS, self.fields(ids)))

    def memory(self) -> "nvml_types.Memory | None":
        return self._struct("nvmlDeviceGetMemoryInfo_v2", _types().Memory, 2)

    def bar1(self) -> "nvml_types.Bar1 | None":
        return self._struct("nvmlDeviceGetBAR1MemoryInfo", _types().Bar1)

    def utilization(self) -> "nvml_types.Utilization | None":
        return self._struct("nvmlDeviceGetUtilizationRates", _types().Utilization)

    def engine_utilization(self, name: str):
        """Encoder, Decoder, Jpg or Ofa: the percentage (the sampling period dropped)."""
        util, period = C.c_uint(0), C.c_uint(0)
        ok = self._ask(f"nvmlDeviceGet{name}Utilization", C.byref(util), C.byref(period))
        return util.value if ok else None

    def encoder_stats(self) -> tuple:
        a, b, c = C.c_uint(0), C.c_uint(0), C.c_uint(0)
        ok = self._ask("nvmlDeviceGetEncoderStats", C.byref(a), C.byref(b), C.byref(c))
        return (a.value, b.value, c.value) if ok else (None, None, None)

    def fbc_stats(self) -> tuple:
        s = self._struct("nvmlDeviceGetFBCStats", _types().FbcStats)
        return (s.sessions, s.fps, s.latency) if s else (None, None, None)

    def ecc_counter(self, error_type: int, counter: int, location: int):
        return self._u64("nvmlDeviceGetMemoryErrorCounter", C.c_int(error_type), C.c_int(counter),
                         C.c_int(location))

    def ecc_total(self, error_type: int, counter: int):
        return self._u64("nvmlDeviceGetTotalEccErrors", C.c_int(error_type), C.c_int(counter))

    def sram_ecc(self) -> "nvml_types.SramEccStatus | None":
        return self._struct("nvmlDeviceGetSramEccErrorStatus", _types().SramEccStatus, 1)

    def retired_pages(self, cause: int) -> list | None:
        count = C.c_uint(MAX_PAGES)
        pages = (C.c_ulonglong * MAX_PAGES)()
        if not self._ask("nvmlDeviceGetRetiredPages", C.c_int(cause), C.byref(count), pages):
            return None
        return list(pages[:min(count.value, MAX_PAGES)])

    def remapped_rows(self) -> tuple | None:
        out = [C.c_uint(0) for _ in range(4)]
        ok = self._ask("nvmlDeviceGetRemappedRows", *(C.byref(x) for x in out))
        return tuple(x.value for x in out) if ok else None

    def row_remapper_histogram(self) -> "nvml_types.RowRemapperHistogram | None":
        return self._struct("nvmlDeviceGetRowRemapperHistogram", _types().RowRemapperHistogram)

    def temperature(self):
        return self._u32("nvmlDeviceGetTemperature", C.c_int(0))

    def tlimit_temperature(self):
        """GPU T.Limit Temp (how far below its limit the GPU runs): the export table's row."""
        out = C.c_int(0)
        slot = self.lib.export_slot(SLOT_TLIMIT_TEMP, C.c_void_p, C.c_void_p)
        return out.value if slot and slot(self.handle, C.byref(out)) == nvml.SUCCESS else None

    def temperature_threshold(self, kind: int):
        return self._u32("nvmlDeviceGetTemperatureThreshold", C.c_int(kind))

    def clock(self, kind: int):
        return self._u32("nvmlDeviceGetClockInfo", C.c_int(kind))

    def applications_clock(self, kind: int):
        return self._u32("nvmlDeviceGetApplicationsClock", C.c_int(kind))

    def default_applications_clock(self, kind: int):
        return self._u32("nvmlDeviceGetDefaultApplicationsClock", C.c_int(kind))

    def max_clock(self, kind: int):
        return self._u32("nvmlDeviceGetMaxClockInfo", C.c_int(kind))

    def supported_clocks(self) -> list:
        """[(memory MHz, [graphics MHz, ...]), ...]; [] when NVML lists none."""
        count = C.c_uint(MAX_CLOCKS)
        mems = (C.c_uint * MAX_CLOCKS)()
        if not self._ask("nvmlDeviceGetSupportedMemoryClocks", C.byref(count), mems):
            return []
        out = []
        for mem in mems[:min(count.value, MAX_CLOCKS)]:
            n = C.c_uint(MAX_CLOCKS)
            graphics = (C.c_uint * MAX_CLOCKS)()
            ok = self._ask("nvmlDeviceGetSupportedGraphicsClocks", C.c_uint(mem), C.byref(n), graphics)
            out.append((mem, list(graphics[:min(n.value, MAX_CLOCKS)]) if ok else []))
        return out

    def fabric(self) -> "nvml_types.FabricInfo | None":
        return self._struct("nvmlDeviceGetGpuFabricInfoV", _types().FabricInfo, 3)

    def processes(self) -> list:
        """[(pid, used bytes, type "C" or "G", name), ...] of the compute then graphics processes."""
        out = []
        for kind, fn in (("C", "nvmlDeviceGetComputeRunningProcesses_v3"),
                         ("G", "nvmlDeviceGetGraphicsRunningProcesses_v3")):
            for p in self._process_infos(fn):
                out.append((p.pid, p.usedGpuMemory, kind, self.lib.process_name(p.pid)))
        return out

    def _process_infos(self, fn: str) -> list:
        """NVML's list, asked for as many entries as it says it has (INSUFFICIENT_SIZE
        with the count, as NVIDIA's nvidia-smi asks); [] when it answers anything else.
        The list may grow between two asks, so a few asks, each for a little more."""
        count = C.c_uint(0)
        infos = None
        for _ in range(PROCESS_ASKS):
            code = self.lib.ask(fn, self.handle, C.byref(count), infos)
            if code == nvml.SUCCESS:
                return list(infos[:count.value]) if infos is not None else []
            if code != nvml.INSUFFICIENT_SIZE or count.value > names.MAX_GPU_PROCESSES:
                return []
            size = min(count.value + PROCESS_SLACK, names.MAX_GPU_PROCESSES)
            infos = (_types().ProcessInfo * size)()
            count = C.c_uint(size)
        return []

    def cpu_affinity(self, words: int = 16) -> list | None:
        """The CPUs of this GPU's affinity, as numbers."""
        mask = (C.c_ulong * words)()
        if not self._ask("nvmlDeviceGetCpuAffinity", C.c_uint(words), mask):
            return None
        bits = C.sizeof(C.c_ulong) * 8
        return [w * bits + b for w in range(words) for b in range(bits) if mask[w] >> b & 1]

    def nvlink_speeds(self) -> list:
        """Per NVLink (nvidia-smi's fields: count, then state and speed per link):
        the speed in MB/s of an active link, None for an inactive one."""
        (count,) = self.fields([FI_NVLINK_LINK_COUNT])
        if not count:
            return []
        links = list(range(count))
        states = self.fields([FI_NVLINK_GET_STATE] * count, links)
        speeds = self.fields([FI_NVLINK_GET_SPEED] * count, links)
        return [speed if state else None for state, speed in zip(states, speeds)]

    def nvlink_errors(self) -> list:
        """Per NVLink, its (replay, recovery, CRC) error counts as NVIDIA's nvidia-smi nvlink -e
        reads them (FI_NVLINK_ERRORS), each None where NVML answers none."""
        (count,) = self.fields([FI_NVLINK_LINK_COUNT])
        if not count:
            return []
        links = list(range(count))
        return list(zip(*(self.fields([fid] * count, links) for fid in FI_NVLINK_ERRORS)))


    # --- MIG -----------------------------------------------------------------------

    def mig_devices(self) -> list:
        """The MIG devices under this GPU, as NVIDIA's nvidia-smi walks them: each index
        below GetMaxMigDeviceCount that NVML has a handle for."""
        out = []
        for i in range(self._u32("nvmlDeviceGetMaxMigDeviceCount") or 0):
            h = C.c_void_p()
            if self._ask("nvmlDeviceGetMigDeviceHandleByIndex", C.c_uint(i), C.byref(h)):
                out.append(MigDevice(self.lib, i, h, self))
        return out


class MigDevice(Gpu):
    """MIG device ``index`` under ``parent``: NVML answers a MIG handle's name, UUID, memory,
    BAR1 and ECC counters as a GPU's, and these of its own."""

    def __init__(self, lib: nvml.Library, index: int, handle: C.c_void_p, parent: Gpu):
        super().__init__(lib, index, handle)
        self.parent = parent

    def instance_ids(self) -> tuple:
        """(GPU instance id, compute instance id)."""
        return self._u32("nvmlDeviceGetGpuInstanceId"), self._u32("nvmlDeviceGetComputeInstanceId")

    def attributes(self) -> "nvml_types.DeviceAttributes | None":
        return self._struct("nvmlDeviceGetAttributes_v2", _types().DeviceAttributes)


def _reading(shape: str, function: str):
    return lambda self: getattr(self, shape)("nvmlDeviceGet" + function)


for _shape, _table in (("_u32", U32_READINGS), ("_u64", U64_READINGS), ("_string", STRING_READINGS),
                       ("_pair", PAIR_READINGS)):
    for _name, _function in _table.items():
        setattr(Gpu, _name, _reading(_shape, _function))
