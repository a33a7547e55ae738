"""NVML's values → the words nvidia-smi prints for them. Pure; shared by every renderer.

These are facts of nvidia-smi's output (NVIDIA's names for NVML's enums, its
units and rounding), not of the node: what the node is comes from NVML.
"""

from __future__ import annotations

MIB = 1024 * 1024
NA = "N/A"
#: The report's timestamp, as NVIDIA's nvidia-smi prints it: ctime's layout, the day of the
#: month padded with a space ("Wed Dec  2 05:07:53 2026").
TIMESTAMP_FORMAT = "%a %b %e %H:%M:%S %Y"

#: nvmlBrandType_t → the name nvidia-smi prints.
BRANDS = {1: "Quadro", 2: "Tesla", 3: "NVS", 4: "Grid", 5: "GeForce", 6: "Titan",
          7: "NVIDIA Virtual Applications", 8: "NVIDIA Virtual PC", 9: "NVIDIA Virtual Compute Server",
          10: "NVIDIA RTX Virtual Workstation", 11: "NVIDIA Cloud Gaming", 12: "Quadro RTX",
          13: "NVIDIA RTX", 14: "NVIDIA", 15: "GeForce RTX", 16: "Titan RTX"}
#: nvmlDeviceArchitecture_t → its name (nvidia-smi 580; 550 says Unknown for Blackwell).
ARCHITECTURES = {2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere",
                 8: "Ada Lovelace", 9: "Hopper", 10: "Blackwell"}
ARCH_AMPERE, ARCH_ADA = 7, 8
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
OPERATION_MODES = {0: "All On", 1: "Compute", 2: "Low Double Precision"}
VIRTUALIZATION_MODES = {0: "None", 1: "Pass-Through", 2: "VGPU", 3: "Host VGPU", 4: "Host VSGA"}
HOST_VGPU_MODES = {0: "Non SR-IOV", 1: "SR-IOV"}
DRIVER_MODELS = {0: "WDDM", 1: "TCC", 2: "MCDM"}
#: nvmlGpuFabricState_t → (nvidia-smi's word, check-fabric's name).
FABRIC_STATES = {0: ("Not Supported", "NOT_SUPPORTED"), 1: ("Not Started", "NOT_STARTED"),
                 2: ("In Progress", "IN_PROGRESS"), 3: ("Completed", "COMPLETED")}
FABRIC_COMPLETED = 3
PEER_TYPES = {0: "Direct Connected", 1: "Switch Connected"}
#: nvmlClocksEventReasons bits, in nvidia-smi's row order: (row, bit).
CLOCKS_EVENT_REASONS = (("gpu_idle", 0x1), ("applications_clocks_setting", 0x2), ("sw_power_cap", 0x4),
                        ("hw_slowdown", 0x8), ("hw_thermal_slowdown", 0x40),
                        ("hw_power_brake_slowdown", 0x80), ("sync_boost", 0x10),
                        ("sw_thermal_slowdown", 0x20), ("display_clocks_setting", 0x100))
#: The GPU fabric health mask (nvml.h NVML_GPU_FABRIC_HEALTH_MASK_*): (shift, width) per flag.
HEALTH_DEGRADED_BW = (0, 0x3)
HEALTH_ROUTE_RECOVERY = (2, 0x3)
HEALTH_ROUTE_UNHEALTHY = (4, 0x3)
HEALTH_ACCESS_TIMEOUT_RECOVERY = (6, 0x3)
HEALTH_INCORRECT_CONFIGURATION = (8, 0xF)
HEALTH_PARTITION_ASSIGNED = (12, 0x3)          # NVML 13
HEALTH_TRUE = 1
TRUE_FALSE = {1: "True", 2: "False"}
INCORRECT_CONFIGURATIONS = {1: "None", 2: "Incorrect Sysguid", 3: "Incorrect Chassis Sn",
                            4: "No Partition", 5: "Insufficient Nvlinks", 6: "Incompatible Gpu Fw",
                            7: "Invalid Location"}
HEALTH_SUMMARIES = {1: "Healthy", 2: "Unhealthy", 3: "Limited Capacity"}


class Refusal(str):
    """A reading NVML refused with an error nvidia-smi prints as its text (a deprecated
    call, missing permissions) rather than as N/A: every word below passes it on."""


def text(value) -> str:
    return NA if value is None else str(value)


def unit(value, suffix: str) -> str:
    if isinstance(value, Refusal):
        return value
    return NA if value is None else f"{value} {suffix}"


def enabled(value, default: str = NA) -> str:
    """nvmlEnableState_t → Enabled / Disabled."""
    if value is None or isinstance(value, Refusal):
        return default if value is None else value
    return "Enabled" if value else "Disabled"


def word(table: dict, value, default: str = NA) -> str:
    if isinstance(value, Refusal):
        return value
    return default if value is None else table.get(value, default)


#: nvmlDeviceGpuRecoveryAction_t as the 580 report's "GPU Recovery Action" names it (the
#: names NVIDIA's "Error Recovery and Response Flags" give each).
RECOVERY_ACTIONS = {0: "None", 1: "Reset", 2: "Reboot", 3: "Drain P2P", 4: "Drain and Reset"}


def recovery_action(value) -> str:
    return word(RECOVERY_ACTIONS, value)


def yes_no(value) -> str:
    if isinstance(value, Refusal):
        return value
    return NA if value is None else ("Yes" if value else "No")


def mib(value) -> int | None:
    """Bytes as nvidia-smi prints MiB: rounded to the nearest (a real board's 517.5 MiB
    reserved prints 518, and its free memory 40442.5 MiB prints 40443)."""
    return None if value is None else (value + MIB // 2) // MIB


def watts_number(mw) -> str | None:
    """Milliwatts as nvidia-smi prints watts: NVIDIA's formats a C float, so the
    value goes through one (252285 mW prints 252.29, as a double would print 252.28)."""
    if mw is None:
        return None
    import struct                      # a builtin module: costs nothing on start-up

    as_float = struct.unpack("f", struct.pack("f", float(mw) / 1000))[0]
    return f"{as_float:.2f}"


def watts(mw) -> str:
    if isinstance(mw, Refusal):
        return mw
    number = watts_number(mw)
    return NA if number is None else f"{number} W"


def pstate(value) -> str:
    if isinstance(value, Refusal):
        return value
    return NA if value is None or value > 15 else f"P{value}"


def brand(value) -> str:
    return word(BRANDS, value, "Unknown" if value is not None else NA)


def architecture(value) -> str:
    return word(ARCHITECTURES, value, "Unknown" if value is not None else NA)


def pre_ada(arch) -> bool:
    """nvidia-smi prints absolute temperature thresholds for these, T.Limit ones after."""
    return arch is not None and arch < ARCH_ADA


def cpu_list(cpus: list | None) -> str:
    """[0, 1, 2, 5] → "0-2,5"."""
    if not cpus:
        return NA
    runs, start, prev = [], cpus[0], cpus[0]
    for cpu in cpus[1:] + [None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(runs)


def uuid_text(raw) -> str:
    """16 bytes → 8-4-4-4-12 lower-case hex."""
    h = bytes(raw).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def health_flag(mask: int, field: tuple) -> int:
    shift, width = field
    return mask >> shift & width
