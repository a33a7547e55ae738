"""The fields of a GPU's record that take more than one leaf of the report.

Each ``_x(dev, leaf)`` reads leaves through ``leaf(path)`` (None for N/A or
absent; ``leaf.has(path)``: printed at all) and fills the record; ``fill`` runs
them all. Pure.
"""

from __future__ import annotations

from mokka.core import names

MIB = 1024 * 1024
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


def num(text: str) -> int:
    return int(text.split()[0])


def fill(dev: dict, leaves: dict, supported_clocks: tuple) -> None:
    def leaf(path: str) -> str | None:
        text = leaves.get(path)
        return None if text is None or text in _NA else text

    leaf.has = leaves.__contains__               # printed, N/A or not
    for part in (_display, _memory, _bar1, _cc_memory, _thermal, _power, _pcie, _fabric, _ecc, _retired):
        part(dev, leaf)
    if supported_clocks:
        dev["supported_clocks"] = {"memory_clocks": [
            {"freq_mhz": num(mem), "graphics_clocks": [num(g) for g in graphics]}
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
    total, reserved, used, free = (leaf(f"fb_memory_usage/{k}") for k in ("total", "reserved", "used", "free"))
    if total is None:
        return
    t = num(total)
    r, u = num(reserved or "0"), num(used or "0")
    r_bytes, u_bytes = mib_bytes(t, [r, u], num(free) if free else t - r - u)
    mem = dev.setdefault("memory", {})
    mem.update({"total_bytes": t * MIB, "reserved_bytes": r_bytes, "used_bytes": u_bytes,
                "free_bytes": max(t * MIB - r_bytes - u_bytes, 0)})


def _bar1(dev, leaf) -> None:
    total, used = leaf("bar1_memory_usage/total"), leaf("bar1_memory_usage/used")
    if total is not None:
        t, u = num(total) * MIB, num(used or "0") * MIB
        dev["bar1_memory"] = {"total_bytes": t, "free_bytes": max(t - u, 0), "used_bytes": u}


def _cc_memory(dev, leaf) -> None:
    total, used = leaf("cc_protected_memory_usage/total"), leaf("cc_protected_memory_usage/used")
    if total is not None:
        dev["cc_protected_memory"] = {"total_bytes": num(total) * MIB, "used_bytes": num(used or "0") * MIB}


def _thermal(dev, leaf) -> None:
    """Absolute thresholds before Ada; from Ada on nvidia-smi prints them below T.Limit,
    the maximum operating temperature, which the GPU's own T.Limit row places."""
    thermal = dev.setdefault("thermal", {})
    temp = leaf("temperature/gpu_temp")
    if temp is not None:
        thermal["temperature_gpu_c"] = num(temp)
    absolute = {"gpu_temp_max_threshold": "shutdown_threshold_c", "gpu_temp_slow_threshold": "slowdown_threshold_c",
                "gpu_temp_max_gpu_threshold": "max_operating_c", "gpu_target_temperature": "target_temperature_c",
                "gpu_temp_max_mem_threshold": "memory_max_c"}
    for tag, key in absolute.items():
        if leaf(f"temperature/{tag}") is not None:
            thermal[key] = num(leaf(f"temperature/{tag}"))
    margin = leaf("temperature/gpu_temp_tlimit")
    if margin is not None and temp is not None:
        limit = num(temp) + num(margin)
        relative = {"gpu_temp_max_tlimit_threshold": "shutdown_threshold_c",
                    "gpu_temp_slow_tlimit_threshold": "slowdown_threshold_c",
                    "gpu_temp_max_gpu_tlimit_threshold": "max_operating_c",
                    "gpu_temp_max_mem_tlimit_threshold": "memory_max_c"}
        for tag, key in relative.items():
            if leaf(f"temperature/{tag}") is not None:
                thermal[key] = limit - num(leaf(f"temperature/{tag}"))
    if not thermal:
        del dev["thermal"]


def _power(dev, leaf) -> None:
    """The GPU's average draw only where it is not the current draw (the mock's default)."""
    instant, average = leaf("gpu_power_readings/instant_power_draw"), leaf("gpu_power_readings/average_power_draw")
    if instant is None:
        return
    if average is None:
        dev.setdefault("power", {})["average_draw_mw"] = NA
    elif average != instant:
        dev.setdefault("power", {})["average_draw_mw"] = round(float(average.split()[0]) * 1000)


def _pcie(dev, leaf) -> None:
    """The host's generation only where it is not the pair's (the mock's default)."""
    path = "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen"
    host, pair = leaf(path), leaf("pci/pci_gpu_link_info/pcie_gen/max_link_gen")
    if pair is not None and leaf.has(path) and host != pair:
        dev.setdefault("pcie", {})["max_host_link_gen"] = NA if host is None else num(host)


def _fabric(dev, leaf) -> None:
    state = FABRIC_STATES.get(leaf("fabric/state") or "")
    if state is None:
        return
    fabric: dict = {"state": state}
    if leaf("fabric/cliqueId") is not None:
        fabric["clique_id"] = num(leaf("fabric/cliqueId"))
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
    """What the mock derives with health_summary auto (native/nvml/fabric.c)."""
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
            text = leaf(f"ecc_errors/{scope}/{tag}")
            if text is not None:
                ecc.setdefault("errors", {}).setdefault(scope, {}).setdefault(kind, {})["device_memory"] = num(text)
    sram: dict = {}
    for scope in ("volatile", "aggregate"):
        for tag in ("correctable", "uncorrectable", "uncorrectable_parity", "uncorrectable_secded"):
            text = leaf(f"ecc_errors/{scope}/sram_{tag}")
            if text is not None:
                sram.setdefault(scope, {})[tag] = num(text)
    exceeded = leaf("ecc_errors/aggregate/sram_threshold_exceeded")
    if exceeded is not None:
        sram["threshold_exceeded"] = exceeded == "Yes"
    for source in ("l2", "sm", "microcontroller", "pcie", "other"):
        text = leaf(f"ecc_errors/aggregate_uncorrectable_sram_sources/sram_{source}")
        if text is not None:
            sram.setdefault("uncorrectable_sources", {})[source] = num(text)
    if sram:
        ecc["sram"] = sram
    if not ecc:
        del dev["ecc"]


def _retired(dev, leaf) -> None:
    blocks = {"multiple_single_bit_retirement": "single_bit_retirement", "double_bit_retirement": "double_bit_retirement"}
    retired: dict = {}
    for tag, key in blocks.items():
        count = leaf(f"retired_pages/{tag}/retired_count")
        if count is None:
            continue
        pages = [int(word, 16) for word in (leaf(f"retired_pages/{tag}/retired_pagelist") or "").split()]
        retired[key] = {"count": num(count), "addresses": pages}
    if not retired:
        return
    for tag in ("pending_blacklist", "pending_retirement"):
        if leaf(f"retired_pages/{tag}") is not None:
            retired[tag] = leaf(f"retired_pages/{tag}") == "Yes"
    dev["retired_pages"] = retired
