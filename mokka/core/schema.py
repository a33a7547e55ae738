"""The profile format, declared once: every known field's type, range and pattern.

``PROFILE`` is a tree of small specs (``Map``, ``List``, ``Int``, ``Str``, ...);
``check(doc, where)`` walks a parsed document against it and raises a
``ProfileError`` naming the first bad field, with the message the spec gives.
Keys the spec does not know are accepted, as the Go loader ignores them, and
returned so a caller may name them. Patterns are matched whole (``fullmatch``),
so a trailing newline never passes. What spans fields (duplicates, reserved
memory within total, the device count) is checked in ``profile.py`` after this.

Pure: a function of the parsed document only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from mokka.core import kernelmodules, names

INT64_MAX = 2**63 - 1
NA = "N/A"
UINT32_MAX = 2**32 - 1
INT32_MAX = 2**31 - 1
#: C0 controls and DEL: no known string field may hold one (they name files, CDI devices,
#: lines of the companion the C library reads).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

ARCHITECTURES = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada_lovelace",
                 "ada", "hopper", "blackwell", "rubin")
FAILURE_MODES = ("", "healthy", "lost", "fallen_off_bus", "ecc_uncorrectable")
FABRIC_STATES = ("", *names.FABRIC_STATE_CODES, names.FABRIC_STATE_AUTO)

BUS_ID = re.compile(r"(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])")
UUID = re.compile(r"GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
VERSION = re.compile(r"[0-9]+(?:\.[0-9]+){1,3}")
ROOT_COMPLEX = re.compile(r"pci[0-9a-fA-F]{4}:[0-9a-fA-F]{2}")


class Invalid(Exception):
    """One field is wrong: ``field`` is its dotted path, ``message`` what to do."""

    def __init__(self, field: str, message: str):
        super().__init__(field, message)
        self.field, self.message = field, message


def kind(value) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "empty"}.get(type(value), type(value).__name__)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- specs -----------------------------------------------------------------------

class Spec:
    def check(self, value, path: str, unknown: list[str]) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Any(Spec):
    """Anything plain (what an unknown key may hold)."""

    def check(self, value, path, unknown):
        pass


@dataclass(frozen=True)
class Int(Spec):
    minimum: int = 0
    maximum: int = INT64_MAX

    def check(self, value, path, unknown):
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(path, f"must be an integer, not {kind(value)} ({_show(value)})")
        if value < self.minimum:
            raise Invalid(path, f"must be at least {self.minimum}, got {value}")
        if value > self.maximum:
            raise Invalid(path, f"must be at most {self.maximum}, got {value}")


@dataclass(frozen=True)
class Number(Spec):
    minimum: float = 0
    maximum: float = float(INT64_MAX)

    def check(self, value, path, unknown):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and not math.isfinite(value)):
            raise Invalid(path, f"must be a finite number, not {kind(value)} ({_show(value)})")
        if not self.minimum <= value <= self.maximum:
            raise Invalid(path, f"must be in [{self.minimum:g}, {self.maximum:g}], got {value!r}")


@dataclass(frozen=True)
class Scalar(Spec):
    """A string, number or boolean (e.g. a fan speed that may read "N/A")."""

    def check(self, value, path, unknown):
        if isinstance(value, (dict, list)):
            raise Invalid(path, f"must be a single value, not {kind(value)}")
        if isinstance(value, str):
            Str(max_len=256).check(value, path, unknown)


@dataclass(frozen=True)
class Reading(Spec):
    """An integer, or "N/A" for a reading the board's NVML does not support."""

    minimum: int = 0
    maximum: int = INT64_MAX

    def check(self, value, path, unknown):
        if value != NA:
            Int(self.minimum, self.maximum).check(value, path, unknown)


@dataclass(frozen=True)
class Bool(Spec):
    def check(self, value, path, unknown):
        if not isinstance(value, bool):
            raise Invalid(path, f"must be true or false, not {kind(value)} ({_show(value)})")


@dataclass(frozen=True)
class Str(Spec):
    """A string; ``numbers``: an unquoted number is taken as its text (versions)."""

    pattern: re.Pattern | None = None
    example: str = ""
    choices: tuple = ()
    max_len: int = 256
    numbers: bool = False
    file_name: bool = False          # it names a file or directory on the node
    noun: str = "value"              # "unknown <noun> 'x'" when choices do not match

    def check(self, value, path, unknown):
        if self.numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            quote = "; quote it" if isinstance(value, (int, float, bool)) else ""
            raise Invalid(path, f"must be a string, not {kind(value)} ({_show(value)}){quote}")
        if len(value) > self.max_len:
            raise Invalid(path, f"is {len(value)} characters long; at most {self.max_len}")
        if _CONTROL.search(value):
            raise Invalid(path, f"{_show(value)} may not contain control characters "
                                "(newline, tab, NUL, ...)")
        if self.file_name and ("/" in value or value in (".", "..")):
            raise Invalid(path, f"{_show(value)} may not contain '/' or be '.' or '..' "
                                "(it names files on the node)")
        if self.choices and value.lower() not in self.choices:
            raise Invalid(path, f"unknown {self.noun} {_show(value)}; use one of "
                                + ", ".join(c for c in self.choices if c))
        if self.pattern is not None and value != "" and not self.pattern.fullmatch(value):
            raise Invalid(path, f"{_show(value)} is not {self.example}")


@dataclass(frozen=True)
class Id(Spec):
    """An unsigned id: an integer or a numeric string such as ``0x20B010DE``."""

    maximum: int = UINT32_MAX
    example: str = "0x20B010DE"
    what: str = "a 32-bit PCI id"

    def check(self, value, path, unknown):
        number = value
        if isinstance(value, str) and not _CONTROL.search(value):
            try:
                number = int(value, 0)
            except ValueError:
                number = None
        if isinstance(number, bool) or not isinstance(number, int):
            raise Invalid(path, f"{_show(value)} is not a number (e.g. {self.example})")
        if not 0 <= number <= self.maximum:
            raise Invalid(path, f"{_show(value)} is outside 0..0x{self.maximum:X} ({self.what})")


@dataclass(frozen=True)
class List(Spec):
    item: Spec = Any()
    max_len: int = 4096

    def check(self, value, path, unknown):
        if not isinstance(value, list):
            raise Invalid(path, f"must be a list, not {kind(value)} ({_show(value)})")
        if len(value) > self.max_len:
            raise Invalid(path, f"lists {len(value)} entries; at most {self.max_len}")
        for n, item in enumerate(value):
            if item is not None or not isinstance(self.item, Map):
                self.item.check(item, f"{path}[{n}]", unknown)
            else:
                raise Invalid(f"{path}[{n}]", "must be a mapping, not empty")


@dataclass(frozen=True)
class Map(Spec):
    fields: dict = field(default_factory=dict)
    required: tuple = ()
    hints: dict = field(default_factory=dict)       # field -> example for "is required"

    def check(self, value, path, unknown):
        if not isinstance(value, dict):
            raise Invalid(path, f"must be a mapping, not {kind(value)} ({_show(value)})")
        for key in self.required:
            if value.get(key) in (None, ""):
                hint = self.hints.get(key)
                raise Invalid(_join(path, key), "is required" + (f" (e.g. {hint})" if hint else ""))
        for key, item in value.items():
            sub = _join(path, key)
            spec = self.fields.get(key)
            if spec is None:
                unknown.append(sub)
            elif item is not None:                  # an empty value is the field left out
                spec.check(item, sub, unknown)


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


def ints(words: str, **kw) -> dict:
    return {w: Int(**kw) for w in words.split()}


def strs(words: str, **kw) -> dict:
    return {w: Str(**kw) for w in words.split()}


def bools(words: str) -> dict:
    return {w: Bool() for w in words.split()}


# --- the profile ------------------------------------------------------------------

_ECC_COUNTS = Map(ints("device_memory l1_cache l2_cache register_file texture_memory total"))
_ECC_KIND = Map({"double_bit": _ECC_COUNTS, "single_bit": _ECC_COUNTS})
#: ``uncorrectable``: one count, as boards before Ampere report it (no parity / SEC-DED split,
#: so no nvmlDeviceGetSramEccErrorStatus).
_SRAM_COUNTS = Map(ints("correctable uncorrectable uncorrectable_parity uncorrectable_secded"))
_RETIRED = Map({"count": Int(), "addresses": List(Id(2**64 - 1, "0x1234000", "a 64-bit address"),
                                                  max_len=4096)})
_VERSION_STR = Str(VERSION, "a version like 550.163.01", numbers=True, max_len=32)
_BUS = Str(BUS_ID, "a PCI address like 00000000:07:00.0", max_len=32)

#: A MIG profile's name as nvidia-smi prints it (``1g.10gb``, ``1g.10gb+me``, ``1c.3g.40gb``).
MIG_PROFILE_NAME = re.compile(r"[0-9]+[cg](?:\.[0-9]+g)?\.[0-9]+gb(?:[+-][a-z.]+)?")
_MIG_NAME = Str(MIG_PROFILE_NAME, "a MIG profile name like 1g.10gb", max_len=95)
#: A placement's start slots (memory slices of the GPU, compute slices of a GPU instance).
_MIG_SLOTS = List(Int(maximum=7), max_len=8)
#: One compute instance profile of a GPU instance profile (nvidia-smi mig -lcip): its engines
#: are its GPU instance's, shared.
MIG_COMPUTE_INSTANCE_PROFILE = Map({
    "index": Int(maximum=7), "id": Int(maximum=UINT32_MAX - 1), "name": _MIG_NAME,
    "slices": Int(1, 8), "instances": Int(1, 8), "multiprocessors": Int(maximum=UINT32_MAX),
    "placements": _MIG_SLOTS,
}, required=("index", "id", "name", "slices"))
#: One GPU instance profile of a board (nvidia-smi mig -lgip / -lgipp).
MIG_GPU_INSTANCE_PROFILE = Map({
    "index": Int(maximum=16), "id": Int(maximum=UINT32_MAX - 1), "name": _MIG_NAME,
    "slices": Int(1, 8), "instances": Int(1, 8), "memory_mib": Int(),
    **ints("multiprocessors copy_engines decoders encoders jpegs ofas", maximum=UINT32_MAX),
    "p2p": Bool(), "placement_size": Int(1, 8), "placements": _MIG_SLOTS,
    "compute_instance_profiles": List(MIG_COMPUTE_INSTANCE_PROFILE, max_len=8),
}, required=("index", "id", "name", "slices"))
#: A named layout: the GPU instances to create, by profile name, each with its default
#: compute instance (mig-parted's ``mig-devices``).
MIG_LAYOUT = Map({"name": Str(max_len=64), "gpu_instances": List(_MIG_NAME, max_len=8)},
                 required=("name",))
MIG = Map({"max_gpu_instances": Int(maximum=64), **strs("mode_current mode_pending"),
           "gpu_instance_profiles": List(MIG_GPU_INSTANCE_PROFILE, max_len=17),
           "layout": Str(max_len=64), "layouts": List(MIG_LAYOUT, max_len=64)})

#: Fields of device_defaults and of each device entry (Go's DeviceConfig).
DEVICE_FIELDS = {
    "name": Str(file_name=True, max_len=96),
    "architecture": Str(choices=("", *ARCHITECTURES), noun="architecture"),
    **strs("serial brand board_part_number vbios_version compute_mode performance_state "
           "persistence_mode gpu_part_number gpu_fru_part_number", max_len=96),
    # Mokka's own: what a capture of a real board holds beyond the Go format.
    "board_id": Id(what="a 32-bit board id"),
    "pdi": Id(2**64 - 1, "0x0000000000000001", "a 64-bit PDI"),
    "addressing_mode": Str(choices=("", *names.ADDRESSING_MODES), noun="addressing mode"),
    "sparse_operation_mode": Str(choices=("", "enabled", "disabled"), noun="mode"),
    # NVLink-C2C to the CPU: a board that has it says enabled or disabled (without: features)
    "c2c_mode": Str(choices=("", "enabled", "disabled"), noun="mode"),
    # the last flush of the InfoROM's black box: when (microseconds since the epoch), how long
    "inforom_bbx_flush": Map(ints("timestamp_us duration_us")),
    "capabilities": Map({"egm": Bool()}),
    "cc_protected_memory": Map(ints("total_bytes used_bytes")),
    # Readings the board's NVML answered with an error (names.REFUSALS), by reading.
    "refused": Map({k: Str(choices=names.REFUSALS, noun="refusal")
                    for k in ("applications_clocks", "power_state", "reset_status")}),
    "memory": Map(ints("total_bytes reserved_bytes free_bytes used_bytes memory_bus_width")),
    "bar1_memory": Map(ints("total_bytes free_bytes used_bytes")),
    "power": Map({**ints("default_limit_mw enforced_limit_mw min_limit_mw max_limit_mw "
                         "current_draw_mw total_energy_consumption_mj memory_average_draw_mw "
                         "memory_instant_draw_mw"),
                  # averaged over a second; without it, the current draw
                  "average_draw_mw": Reading(),
                  "module": Map(ints("average_draw_mw instant_draw_mw current_limit_mw requested_limit_mw "
                                     "default_limit_mw min_limit_mw max_limit_mw")),
                  **strs("management_mode power_state"), "management_supported": Bool()}),
    "thermal": Map(ints("max_operating_c shutdown_threshold_c slowdown_threshold_c "
                        "target_temperature_c temperature_gpu_c temperature_memory_c memory_max_c",
                        minimum=-273)),
    "clocks": Map(ints("graphics_app graphics_app_default graphics_current graphics_max "
                       "memory_app memory_app_default memory_current memory_max sm_app "
                       "sm_app_default sm_current sm_max video_app video_app_default "
                       "video_current video_max graphics_customer_boost")),
    "clocks_throttle_reasons": Map({
        **bools("applications_clocks_setting display_clocks_setting gpu_idle "
                "hw_power_brake_slowdown hw_slowdown hw_thermal_slowdown sw_power_cap "
                "sw_thermal_slowdown sync_boost"),
        "counters": Map(ints("hw_power_brake_slowdown_us hw_thermal_slowdown_us sw_power_cap_us "
                             "sw_thermal_slowdown_us sync_boost_us"))}),
    "supported_clocks": Map({"memory_clocks": List(Map({
        "freq_mhz": Int(), "graphics_clocks": List(Int())}))}),
    "utilization": Map(ints("gpu memory encoder decoder jpeg ofa", maximum=100)),
    # Moving readings (native/nvml/engine/dynamic.c): bounded so that
    # every step of the integer algorithm stays inside a signed 64-bit value.
    "dynamic_metrics": Map({
        "seed": Int(maximum=INT64_MAX),
        "temperature": Map({**ints("base_c variance_c ramp_c", maximum=1000),
                            "ramp_period_sec": Int(maximum=10**9)}),
        "power": Map(ints("base_mw variance_mw", maximum=10**9)),
        "utilization": Map({
            **ints("gpu_min gpu_max memory_min memory_max", maximum=100),
            "burst_period_sec": Int(maximum=10**9),
            "pattern": Str(choices=names.DYNAMIC_PATTERNS, noun="pattern")}),
        # Mokka's own: memory used moving between percentages of total - reserved.
        "memory": Map({
            **ints("used_min_pct used_max_pct", maximum=100),
            "burst_period_sec": Int(maximum=10**9),
            "pattern": Str(choices=names.DYNAMIC_PATTERNS, noun="pattern")})}),
    "ecc": Map({**strs("default_mode mode_current mode_pending"),
                "repair": Map(bools("channel_pending tpc_pending")),
                "unrepairable_memory": Bool(),
                "errors": Map({"aggregate": _ECC_KIND, "volatile": _ECC_KIND}),
                "sram": Map({"aggregate": _SRAM_COUNTS, "volatile": _SRAM_COUNTS,
                             "threshold_exceeded": Bool(),
                             "uncorrectable_sources": Map(ints("l2 microcontroller other pcie "
                                                               "sm"))})}),
    # irq: the GPU's interrupt (sysfs ``irq``, the driver's /proc ``information``,
    # nvmlDeviceGetIrqNum); without it, mokka.core.compile gives each GPU its own.
    "pci": Map({"bus_id": _BUS, "device_id": Id(), "subsystem_id": Id(), "irq": Int(maximum=UINT32_MAX)}),
    "pcie": Map({**ints("current_link_gen current_link_width max_link_gen max_link_width "
                        "replay_counter rx_throughput_kbps tx_throughput_kbps gpu_max_link_gen"),
                 # the host's side of the link (without it, max_link_gen)
                 "max_host_link_gen": Reading(),
                 **{k: List(Str(choices=tuple(c.lower() for c in names.PCIE_ATOMIC_CAPS),
                                noun="atomic operation"), max_len=len(names.PCIE_ATOMIC_CAPS))
                    for k in ("atomic_caps_inbound", "atomic_caps_outbound")}}),
    "platform": Map({**ints("host_id slot_number tray_index module_id", maximum=UINT32_MAX),
                     "gpu_fabric_guid": Int(maximum=2**64 - 1),
                     **strs("chassis_serial_number peer_type")}),
    "fan": Map({"count": Int(maximum=64), "speed_percent": Scalar(), "target_speed_percent": Scalar()}),
    # lost: what ``mokka ctl set GPU lost=true`` writes (names.STATE_LOST_KEY); recovery_action:
    # what NVML_FI_DEV_GET_GPU_RECOVERY_ACTION reports (``ctl set GPU recovery_action=...``).
    "failure": Map({"mode": Str(choices=FAILURE_MODES, noun="mode"), "probability": Number(0, 1),
                    "after_calls": Int(), "lost": Bool(),
                    "recovery_action": Str(choices=names.GPU_RECOVERY_ACTIONS, noun="recovery action")}),
    "fabric": Map({"state": Str(choices=FABRIC_STATES, noun="state"), "clique_id": Int(maximum=UINT32_MAX),
                   "cluster_uuid": Str(max_len=64), "health_summary": Str(),
                   "health": Map({**strs("access_timeout_recovery degraded_bandwidth "
                                         "incorrect_configuration route_recovery route_unhealthy",
                                         numbers=True),
                                  "partition_assigned": Bool()})}),
    "mig": MIG,
    "processes": List(Map({"pid": Int(maximum=2**32 - 1), "name": Str(max_len=1024),
                           "type": Str(), "used_memory_mib": Int()}), max_len=names.MAX_GPU_PROCESSES),
    "accounting": Map({"buffer_size": Int(), "mode": Str()}),
    "compute_capability": Map(ints("major minor", maximum=99)),
    # What the CUDA driver reports of the board beyond NVML (native/cuda: cuDeviceGetAttribute);
    # compile fills what a profile leaves out from its compute capability (mokka/core/cudaboard.py).
    "cuda": Map(ints("multiprocessor_count l2_cache_bytes max_threads_per_multiprocessor "
                     "max_blocks_per_multiprocessor shared_memory_per_multiprocessor_bytes "
                     "shared_memory_per_block_optin_bytes registers_per_multiprocessor "
                     "async_engine_count", maximum=INT32_MAX)),
    "display": Map(strs("active mode")),
    "driver_model": Map(strs("current pending")),
    "gpu_operation_mode": Map(strs("current pending")),
    "gsp_firmware": Map({"mode": Str(), "version": Str(numbers=True)}),
    "inforom": Map(strs("ecc_object image_version oem_object pwr_object", numbers=True)),
    "encoder_stats": Map(ints("average_fps average_latency_us session_count")),
    "fbc_stats": Map(ints("average_fps average_latency_us session_count")),
    "features": Map(bools("confidential_compute decompression_engine fifth_gen_tensor_cores "
                          "fp4_support fp8_support nvlink_c2c transformer_engine")),
    "gpm": Map({**ints("pcie_rx_mib_per_sec pcie_tx_mib_per_sec"), "supported": Bool()}),
    "grace_superchip": Map({**bools("coherent_memory enabled"),
                            **ints("cpu_cores cpu_memory_gb")}),
    "num_gpu_cores": Int(),
    "remapped_rows": Map({**ints("correctable uncorrectable correctable_inactive uncorrectable_inactive"),
                          **bools("failure_occurred pending"),
                          "availability_histogram": Map(ints("high low max none partial"))}),
    "retired_pages": Map({**bools("pending_blacklist pending_retirement"),
                          "double_bit_retirement": _RETIRED, "single_bit_retirement": _RETIRED}),
    # Each NVLink's error counters (nvmlDeviceGetNvLinkErrorCounter), item N for link N;
    # what ``mokka ctl nvlink`` raises. A reset clears them, as NVML's counters are the driver's.
    "nvlink_errors": List(Map(ints("replay recovery crc_flit crc_data ecc_data", maximum=2**64 - 1)),
                          max_len=names.MAX_NVLINK_LINKS),
    "topology": Map({"default_level": Str()}),
    "virtualization": Map(strs("host_vgpu_mode mode")),
}

DEVICE_DEFAULTS = Map(DEVICE_FIELDS)
DEVICE_ENTRY = Map({**DEVICE_FIELDS,
                    "index": Int(maximum=names.MAX_GPUS - 1),
                    "uuid": Str(UUID, "a GPU UUID like GPU-12345678-1234-1234-1234-123456780000"),
                    "minor_number": Int(maximum=254),
                    "grace_cpu_pair": Int(maximum=INT64_MAX)},
                   required=("index",))

#: One NVLink of a profile's nvlink block (and of a compiled GPU's ``nvlink_links``).
LINK = Map({"link": Int(maximum=63), "state": Str(), "remote_device_type": Str(),
            "remote_pci_bus_id": Str(max_len=32), "remote_index": Int(maximum=UINT32_MAX)})

PROFILE = Map({
    "version": Str(numbers=True, max_len=32),
    "system": Map({"driver_version": _VERSION_STR, "cuda_version": Str(numbers=True, max_len=32),
                   "nvml_version": Str(numbers=True, max_len=32),
                   **ints("cuda_version_major cuda_version_minor", maximum=999),
                   "num_devices": Int(maximum=names.MAX_GPUS),
                   "identity": Str(choices=names.IDENTITY_MODES, noun="identity"),
                   # The kernel modules the node loads besides nvidia, nvidia_uvm and
                   # nvidia_modeset (mokka.core.kernelmodules).
                   "kernel_modules": List(Str(choices=kernelmodules.DECLARABLE, noun="kernel module",
                                              max_len=32), max_len=len(kernelmodules.NAMES))},
                  required=("driver_version",), hints={"driver_version": "550.163.01"}),
    "device_defaults": DEVICE_DEFAULTS,
    "devices": List(DEVICE_ENTRY, max_len=names.MAX_GPUS),
    "nvlink": Map({"version": Int(maximum=99), "links_per_gpu": Int(maximum=names.MAX_NVLINK_LINKS),
                   "bandwidth_per_link_mbps": Int(), "c2c_enabled": Bool(),
                   "switches": List(Map({"bdf": Str(max_len=32), "uuid": Str(max_len=96)}),
                                    max_len=256),
                   "defaults": Map({"state": Str()}),
                   "links": List(LINK, max_len=names.MAX_NVLINK_LINKS),
                   "device_links": List(Map({"index": Int(maximum=names.MAX_GPUS - 1),
                                             "links": List(LINK, max_len=names.MAX_NVLINK_LINKS)},
                                            required=("index",)),
                                        max_len=names.MAX_GPUS)}),
    "infiniband": Map({"enabled": Bool(), "hcas_per_gpu": Int(maximum=16),
                       "hca_count": Int(maximum=names.MAX_HCAS), "rate_gbps": Int(maximum=10_000),
                       **strs("board_id fw_version guid_prefix hca_type hw_rev link_layer "
                              "node_desc_template phys_state port_state")}),
    "pcie_topology": Map({"cores_per_numa": Int(maximum=1 << 20),
                          "root_complexes": List(Map({
                              "id": Str(ROOT_COMPLEX, "a root complex name like pci0000:00",
                                        max_len=16),
                              "numa_node": Int(maximum=1023), "cpu_affinity": Str(max_len=4096),
                              "devices": List(_BUS, max_len=names.MAX_GPUS * 4)},
                              required=("id",), hints={"id": "pci0000:00"}), max_len=256)}),
    "dynamic_metrics_defaults": Map({"power": Map(ints("base_mw variance_mw"))}),
    "platform": Map(),
}, required=("version", "system"), hints={"version": 'version: "1.0"', "system": "system: {driver_version: 550.163.01}"})


def check(doc, spec: Spec = PROFILE) -> list[str]:
    """Raise Invalid for the first bad field; return the paths of unknown keys."""
    unknown: list[str] = []
    if not isinstance(doc, dict):
        raise Invalid("", f"the document must be a mapping, not {kind(doc)}")
    spec.check(doc, "", unknown)
    _check_keys(doc)
    return unknown


def nearest_key(path: str, spec: Spec = PROFILE) -> str | None:
    """The known key nearest an unknown key's path, for "did you mean": "name" for
    "device_defaults.nmae" or "devices[1].nmae"; None if none is close."""
    import difflib

    def mapping(spec):
        while isinstance(spec, List):
            spec = spec.item
        return spec if isinstance(spec, Map) else None

    *parents, key = re.sub(r"\[\d+\]", "", path).split(".")
    for part in parents:
        spec = mapping(spec)
        spec = spec.fields.get(part) if spec is not None else None
    spec = mapping(spec)
    if spec is None:
        return None
    close = difflib.get_close_matches(key, list(spec.fields), n=1)
    return close[0] if close else None


def _check_keys(doc) -> None:
    """No key anywhere, known or not, may hold a control character: keys become the
    ``gpu.0.<key>`` lines of the companion the C library scans, one per line; and no
    value, known or not, a NUL, which ends a value there (the companion holds none)."""
    todo = [("", doc)]
    while todo:
        path, item = todo.pop()
        if isinstance(item, str) and "\0" in item:
            raise Invalid(path, f"{_show(item)} may not contain a NUL")
        if isinstance(item, dict):
            for key, value in item.items():
                if _CONTROL.search(key):
                    raise Invalid(path, f"key {_show(key)} may not contain control characters")
                todo.append((_join(path, key), value))
        elif isinstance(item, list):
            todo.extend((f"{path}[{n}]", value) for n, value in enumerate(item))


def count_nodes(value) -> int:
    """Nodes of a parsed document, shared ones counted at each use (iterative)."""
    total, todo = 0, [value]
    while todo:
        item = todo.pop()
        total += 1
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return total
