"""The fields of a GPU's record that take more than one leaf of the report.

Each ``_x(dev, leaf)`` reads leaves through ``leaf(path)`` (None for N/A or
absent; ``leaf.has(path)``: printed at all; ``leaf.num(path)``, ``leaf.celsius(path)``,
``leaf.milliwatts(path)``: its number, None for N/A or absent) and fills the record;
``fill`` runs them all. A leaf that holds no number where one belongs, or one past
what its field can hold, raises BadLeaf naming it. Pure.
"""

from __future__ import annotations

from mokka.core import names
from mokka.core.capture import numbers

MIB = 1024 * 1024
#: The most MiB a memory leaf may count: its bytes must fit a profile's integer.
MAX_MIB = numbers.INT64_MAX // MIB
#: The warmest a temperature leaf may read, either side of zero (boards print under 150 C).
MAX_CELSIUS = 1000
NA = "N/A"
#: nvidia-smi's clock tags -> the profile's clock domains.
CLOCK_DOMAINS = (("graphics_clock", "graphics"), ("sm_clock", "sm"), ("mem_clock", "memory"),
                 ("video_clock", "video"))
FABRIC_STATES = {"Not Started": names.FABRIC_STATE_NOT_STARTED, "In Progress": names.FABRIC_STATE_IN_PROGRESS,
                 "Completed": names.FABRIC_STATE_COMPLETED}
INCORRECT_CONFIGURATIONS = {"None": "none", "Incorrect Sysguid": "incorrect_sysguid",
                            "Incorrect Chassis Sn": "incorrect_chassis_sn", "No Partition": "no_partition",
                            "Insufficient Nvlinks": "insufficient_nvlinks",
                            "Incompatible Gpu Fw": "incompatible_gpu_fw", "Invalid Location": "invalid_location",
                            NA: names.FABRIC_STATE_NOT_SUPPORTED}
_NA = {"N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", ""}
#: Where the supported clocks' texts come from, for naming one that is no number.
MEM_CLOCK, GRAPHICS_CLOCK = ("supported_clocks/supported_mem_clock/value",
                             "supported_clocks/supported_mem_clock/supported_graphics_clock")


class BadLeaf(ValueError):
    """A leaf whose text is no reading of its kind."""

    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.path, self.text = path, text


def read(path: str, text: str, reading=numbers.integer):
    """``reading(text)``, or BadLeaf naming the leaf."""
    try:
        return reading(text)
    except ValueError:
        raise BadLeaf(path, text) from None


class Leaves:
    """One GPU's leaves as the parts below read them."""

    def __init__(self, leaves: dict):
        self._leaves = leaves

    def __call__(self, path: str) -> str | None:
        text = self._leaves.get(path)
        return None if text is None or text in _NA else text

    def has(self, path: str) -> bool:
        """Printed, N/A or not."""
        return path in self._leaves

    def num(self, path: str, maximum: int = numbers.INT64_MAX) -> int | None:
        text = self(path)
        return None if text is None else read(path, text, lambda t: numbers.integer(t, maximum))

    def celsius(self, path: str) -> int | None:
        text = self(path)
        return None if text is None else read(path, text, lambda t: numbers.signed(t, MAX_CELSIUS))

    def milliwatts(self, path: str) -> int | None:
        text = self(path)
        return None if text is None else read(path, text, numbers.milliwatts)


def fill(dev: dict, leaves: dict, supported_clocks: tuple) -> None:
    leaf = Leaves(leaves)
    for part in (_display, _memory, _bar1, _cc_memory, _thermal, _power, _pcie, _fabric, _ecc, _retired):
        part(dev, leaf)
    if supported_clocks:
        dev["supported_clocks"] = {"memory_clocks": [
            {"freq_mhz": read(MEM_CLOCK, mem), "graphics_clocks": [read(GRAPHICS_CLOCK, g) for g in graphics]}
            for mem, graphics in supported_clocks]}


def _display(dev, leaf) -> None:
    """The display mode: "Display Mode" before 580, "Display Attached" after."""
    attached, mode = leaf("display_attached"), leaf("display_mode")
    if attached in ("Yes", "No"):
        dev.setdefault("display", {})["mode"] = "enabled" if attached == "Yes" else "disabled"
    elif mode in ("Enabled", "Disabled"):
        dev.setdefault("display", {})["mode"] = mode.lower()


def mib_bytes(total: int, parts: list[int], shown_free: int) -> list[int]:
    """Bytes for MiB counts nvidia-smi rounded to the nearest: ``parts`` (reserved, used)
    such that total - sum(parts) also rounds to ``shown_free`` (a real board's reserved
    memory is not a whole MiB: 518 MiB reserved and 40443 MiB free of 40960)."""
    off = total - sum(parts) - shown_free          # -1, 0 or 1 on a real report
    half = MIB // 2
    out = [p * MIB for p in parts]
    if off < 0 and out:                             # free rounded up: take half a MiB off the first
        out[0] -= half
    elif off > 0 and out:                           # free rounded down: add just under half a MiB
        out[0] += half - 1
    return out


def _memory(dev, leaf) -> None:
    total, reserved, used, free = (leaf.num(f"fb_memory_usage/{k}", MAX_MIB)
                                   for k in ("total", "reserved", "used", "free"))
    if total is None:
        return
    t, r, u = total, reserved or 0, used or 0
    r_bytes, u_bytes = mib_bytes(t, [r, u], free if free is not None else t - r - u)
    mem = dev.setdefault("memory", {})
    mem.update({"total_bytes": t * MIB, "reserved_bytes": r_bytes, "used_bytes": u_bytes,
                "free_bytes": max(t * MIB - r_bytes - u_bytes, 0)})


def _bar1(dev, leaf) -> None:
    total, used = leaf.num("bar1_memory_usage/total", MAX_MIB), leaf.num("bar1_memory_usage/used", MAX_MIB)
    if total is not None:
        t, u = total * MIB, (used or 0) * MIB
        dev["bar1_memory"] = {"total_bytes": t, "free_bytes": max(t - u, 0), "used_bytes": u}


def _cc_memory(dev, leaf) -> None:
    total = leaf.num("cc_protected_memory_usage/total", MAX_MIB)
    used = leaf.num("cc_protected_memory_usage/used", MAX_MIB)
    if total is not None:
        dev["cc_protected_memory"] = {"total_bytes": total * MIB, "used_bytes": (used or 0) * MIB}


def _thermal(dev, leaf) -> None:
    """Absolute thresholds before Ada; from Ada on nvidia-smi prints them below T.Limit,
    the maximum operating temperature, which the GPU's own T.Limit row places."""
    thermal = dev.setdefault("thermal", {})
    temp = leaf.celsius("temperature/gpu_temp")
    if temp is not None:
        thermal["temperature_gpu_c"] = temp
    absolute = {"gpu_temp_max_threshold": "shutdown_threshold_c", "gpu_temp_slow_threshold": "slowdown_threshold_c",
                "gpu_temp_max_gpu_threshold": "max_operating_c", "gpu_target_temperature": "target_temperature_c",
                "gpu_temp_max_mem_threshold": "memory_max_c"}
    for tag, key in absolute.items():
        if leaf(f"temperature/{tag}") is not None:
            thermal[key] = leaf.celsius(f"temperature/{tag}")
    margin = leaf.celsius("temperature/gpu_temp_tlimit")
    if margin is not None and temp is not None:
        limit = temp + margin
        relative = {"gpu_temp_max_tlimit_threshold": "shutdown_threshold_c",
                    "gpu_temp_slow_tlimit_threshold": "slowdown_threshold_c",
                    "gpu_temp_max_gpu_tlimit_threshold": "max_operating_c",
                    "gpu_temp_max_mem_tlimit_threshold": "memory_max_c"}
        for tag, key in relative.items():
            if leaf(f"temperature/{tag}") is not None:
                thermal[key] = limit - leaf.celsius(f"temperature/{tag}")
    if not thermal:
        del dev["thermal"]


def _power(dev, leaf) -> None:
    """The GPU's average draw only where it is not the current draw (the mock's default)."""
    instant = leaf.milliwatts("gpu_power_readings/instant_power_draw")
    average = leaf.milliwatts("gpu_power_readings/average_power_draw")
    if instant is None:
        return
    if average is None:
        dev.setdefault("power", {})["average_draw_mw"] = NA
    elif average != instant:
        dev.setdefault("power", {})["average_draw_mw"] = average


def _pcie(dev, leaf) -> None:
    """The host's generation only where it is not the pair's (the mock's default)."""
    path = "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen"
    host, pair = leaf.num(path), leaf.num("pci/pci_gpu_link_info/pcie_gen/max_link_gen")
    if pair is not None and leaf.has(path) and host != pair:
        dev.setdefault("pcie", {})["max_host_link_gen"] = NA if host is None else host


def _fabric(dev, leaf) -> None:
    state = FABRIC_STATES.get(leaf("fabric/state") or "")
    if state is None:
        return
    fabric: dict = {"state": state}
    if leaf("fabric/cliqueId") is not None:
        fabric["clique_id"] = leaf.num("fabric/cliqueId", 2**32 - 1)
    if leaf("fabric/clusterUuid") is not None:
        fabric["cluster_uuid"] = leaf("fabric/clusterUuid")
    health: dict = {}
    flags = {"route_recovery_in_progress": "route_recovery", "route_unhealthy": "route_unhealthy",
             "access_timeout_recovery": "access_timeout_recovery"}
    unsupported = names.FABRIC_STATE_NOT_SUPPORTED
    if leaf("fabric/health/bandwidth") is not None:
        health["degraded_bandwidth"] = "true" if leaf("fabric/health/bandwidth") == "Degraded" else "false"
    elif leaf.has("fabric/health/bandwidth"):
        health["degraded_bandwidth"] = unsupported
    for tag, key in flags.items():
        if leaf(f"fabric/health/{tag}") is not None:
            health[key] = leaf(f"fabric/health/{tag}").lower()
        elif leaf.has(f"fabric/health/{tag}"):
            health[key] = unsupported
    wrong = INCORRECT_CONFIGURATIONS.get(leaf("fabric/health/incorrect_configuration") or NA)
    if leaf.has("fabric/health/incorrect_configuration") and wrong != "none":
        health["incorrect_configuration"] = wrong
    assigned = leaf("fabric/health/partition_assigned")
    if assigned is not None:
        health["partition_assigned"] = assigned == "True"
    if health:
        fabric["health"] = health
    summary = leaf("fabric/health/summary")
    if summary is not None and summary != _implied_summary(health):
        fabric["health_summary"] = summary.lower().replace(" ", "_")
    elif summary is None and leaf.has("fabric/health/summary"):
        fabric["health_summary"] = unsupported
    dev["fabric"] = fabric


def _implied_summary(health: dict) -> str:
    """What the mock derives with health_summary auto (native/nvml/api/fabric.c)."""
    wrong = health.get("incorrect_configuration", "none") not in ("none", names.FABRIC_STATE_NOT_SUPPORTED)
    if health.get("route_unhealthy") == "true" or wrong:
        return "Unhealthy"
    if "true" in (health.get("degraded_bandwidth"), health.get("route_recovery"),
                  health.get("access_timeout_recovery")):
        return "Limited Capacity"
    return "Healthy"


def _ecc(dev, leaf) -> None:
    ecc = dev.setdefault("ecc", {})
    for scope in ("volatile", "aggregate"):
        for tag, kind in (("dram_correctable", "single_bit"), ("dram_uncorrectable", "double_bit")):
            count = leaf.num(f"ecc_errors/{scope}/{tag}")
            if count is not None:
                ecc.setdefault("errors", {}).setdefault(scope, {}).setdefault(kind, {})["device_memory"] = count
    sram: dict = {}
    for scope in ("volatile", "aggregate"):
        for tag in ("correctable", "uncorrectable", "uncorrectable_parity", "uncorrectable_secded"):
            count = leaf.num(f"ecc_errors/{scope}/sram_{tag}")
            if count is not None:
                sram.setdefault(scope, {})[tag] = count
    exceeded = leaf("ecc_errors/aggregate/sram_threshold_exceeded")
    if exceeded is not None:
        sram["threshold_exceeded"] = exceeded == "Yes"
    for source in ("l2", "sm", "microcontroller", "pcie", "other"):
        count = leaf.num(f"ecc_errors/aggregate_uncorrectable_sram_sources/sram_{source}")
        if count is not None:
            sram.setdefault("uncorrectable_sources", {})[source] = count
    if sram:
        ecc["sram"] = sram
    if not ecc:
        del dev["ecc"]


def _retired(dev, leaf) -> None:
    blocks = {"multiple_single_bit_retirement": "single_bit_retirement", "double_bit_retirement": "double_bit_retirement"}
    retired: dict = {}
    for tag, key in blocks.items():
        count = leaf.num(f"retired_pages/{tag}/retired_count")
        if count is None:
            continue
        path = f"retired_pages/{tag}/retired_pagelist"
        pages = [read(path, word, numbers.hex_word) for word in (leaf(path) or "").split()]
        retired[key] = {"count": count, "addresses": pages}
    if not retired:
        return
    for tag in ("pending_blacklist", "pending_retirement"):
        if leaf(f"retired_pages/{tag}") is not None:
            retired[tag] = leaf(f"retired_pages/{tag}") == "Yes"
    dev["retired_pages"] = retired
