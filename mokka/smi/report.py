"""``nvidia-smi -q``: one tree per GPU, rendered as XML (``-x``) or as text.

The tree follows nvidia-smi 580's element order and nesting (DTD
nvsmi_device_v13, checked against captured ``-q -x`` documents); each node is
``(tag, value)`` where value is a string or a list of nodes. Text labels come
from ``textq.LABELS``. Pure: the caller passes the GPUs, versions and clock.
"""

from __future__ import annotations

from mokka.smi import values as v
from mokka.smi.values import NA

DTD = "nvsmi_device_v13.dtd"

#: -d section names → the top-level GPU elements they keep.
SECTIONS = {
    "MEMORY": ("fb_memory_usage", "bar1_memory_usage", "cc_protected_memory_usage"),
    "UTILIZATION": ("utilization",),
    "ECC": ("ecc_mode", "ecc_errors"),
    "TEMPERATURE": ("temperature",),
    "POWER": ("gpu_power_readings", "gpu_memory_power_readings", "module_power_readings",
              "power_smoothing", "power_profiles"),
    "CLOCK": ("clocks", "applications_clocks", "default_applications_clocks", "deferred_clocks",
              "max_clocks", "max_customer_boost_clocks", "clock_policy"),
    "COMPUTE": ("compute_mode",),
    "PIDS": ("processes",),
    "PERFORMANCE": ("performance_state", "clocks_event_reasons", "clocks_event_reasons_counters",
                    "sparse_operation_mode"),
    "SUPPORTED_CLOCKS": ("supported_clocks",),
    "PAGE_RETIREMENT": ("retired_pages",),
    "ACCOUNTING": ("accounting_mode", "accounting_mode_buffer_size", "accounted_processes"),
    "ENCODER_STATS": ("encoder_stats",),
    "SUPPORTED_GPU_TARGET_TEMP": ("supported_gpu_target_temp",),
    "VOLTAGE": (),
    "FBC_STATS": ("fbc_stats",),
    "ROW_REMAPPER": ("remapped_rows",),
    "RESET_STATUS": ("gpu_recovery_action",),
    "GSP_FIRMWARE_VERSION": ("gsp_firmware_version",),
    "PCIE": ("pci",),
    "FABRIC": ("fabric",),
    "PLATFORM": ("platformInfo",),
}


def parse_sections(text: str) -> tuple[str, ...]:
    """Comma list of -d names → element tags; ValueError on an unknown name."""
    tags: list[str] = []
    for name in (p.strip().upper() for p in text.split(",") if p.strip()):
        if name not in SECTIONS:
            raise ValueError(name)
        tags.extend(SECTIONS[name])
    return tuple(tags)


def _s(value) -> str:
    return NA if v.is_na(value) else str(value)


def _mhz(value) -> str:
    return v.unit(value, "MHz")


def _c(value) -> str:
    return v.unit(value, "C")


def _width(value) -> str:
    return NA if v.is_na(value) else f"{value}x"


def _active(value) -> str:
    return "Active" if value else "Not Active"


def gpu_tree(gpu: dict, system: dict) -> list:
    """Every element nvidia-smi 580 prints for one board, in its order."""
    pci = gpu.get("pci") or {}
    pcie = gpu.get("pcie") or {}
    power = gpu.get("power") or {}
    thermal = gpu.get("thermal") or {}
    clocks = gpu.get("clocks") or {}
    reasons = gpu.get("clocks_throttle_reasons") or {}
    counters = reasons.get("counters") or {}
    util = gpu.get("utilization") or {}
    mem = v.memory_mib(gpu)
    bar = v.bar1_mib(gpu)
    platform = gpu.get("platform") or {}
    inforom = gpu.get("inforom") or {}
    pstate = _s(gpu.get("performance_state") or power.get("power_state"))
    arch = str(gpu.get("architecture") or "").lower()
    c2c = bool((gpu.get("features") or {}).get("nvlink_c2c")) or bool(
        (gpu.get("grace_superchip") or {}).get("enabled"))

    def plat(key):
        return _s(platform.get(key)) if platform else NA

    tree = [
        ("product_name", _s(gpu.get("name"))),
        ("product_brand", v.brand(gpu)),
        ("product_architecture", v.architecture(gpu)),
        ("display_mode", "Requested functionality has been deprecated"),
        ("display_attached", "No"),
        ("display_active", v.word(v.get(gpu, "display.active"), "Disabled")),
        ("persistence_mode", v.persistence(gpu)),
        ("addressing_mode", NA),
        ("mig_mode", [("current_mig", v.mig_mode(gpu)), ("pending_mig", v.mig_mode(gpu, "mode_pending"))]),
        ("mig_devices", "\n\t\t\tNone\n\t\t"),
        ("accounting_mode", v.word(v.get(gpu, "accounting.mode"), "Disabled")),
        ("accounting_mode_buffer_size", _s(v.get(gpu, "accounting.buffer_size"))),
        ("driver_model", [("current_dm", _s(v.get(gpu, "driver_model.current"))),
                          ("pending_dm", _s(v.get(gpu, "driver_model.pending")))]),
        ("serial", _s(gpu.get("serial"))),
        ("uuid", _s(gpu.get("uuid"))),
        ("pdi", NA),
        ("minor_number", _s(gpu.get("minor_number"))),
        ("vbios_version", _s(gpu.get("vbios_version"))),
        ("multigpu_board", "No"),
        ("board_id", hex(int(gpu.get("board_id") or 0))),
        ("board_part_number", _s(gpu.get("board_part_number"))),
        ("gpu_part_number", NA),
        ("gpu_fru_part_number", NA),
        ("platformInfo", [
            ("chassis_serial_number", plat("chassis_serial_number")),
            ("slot_number", plat("slot_number")),
            ("tray_index", plat("tray_index")),
            ("host_id", plat("host_id")),
            ("peer_type", v.title(platform.get("peer_type")) if platform else NA),
            ("module_id", plat("module_id")),
            ("gpu_fabric_guid", "0x%016x" % int(platform.get("gpu_fabric_guid") or 0) if platform else NA),
        ]),
        ("inforom_version", [
            ("img_version", _s(inforom.get("image_version"))),
            ("oem_object", _s(inforom.get("oem_object"))),
            ("ecc_object", _s(inforom.get("ecc_object"))),
            ("pwr_object", _s(inforom.get("pwr_object"))),
        ]),
        ("inforom_bbx_flush", [("latest_timestamp", NA), ("latest_duration", NA)]),
        ("gpu_operation_mode", [("current_gom", v.title(v.get(gpu, "gpu_operation_mode.current"))),
                                ("pending_gom", v.title(v.get(gpu, "gpu_operation_mode.pending")))]),
        ("c2c_mode", "Enabled" if c2c else NA),
        ("gpu_virtualization_mode", [
            ("virtualization_mode", v.title(v.get(gpu, "virtualization.mode"), "None")),
            ("host_vgpu_mode", _s(v.get(gpu, "virtualization.host_vgpu_mode"))),
            ("vgpu_heterogeneous_mode", NA),
        ]),
        ("gpu_recovery_action", "None"),
        ("gsp_firmware_version", _s(v.get(gpu, "gsp_firmware.version"))),
        ("ibmnpu", [("relaxed_ordering_mode", NA)]),
        ("pci", [
            ("pci_bus", "%02X" % int(pci.get("bus") or 0)),
            ("pci_device", "%02X" % int(pci.get("device") or 0)),
            ("pci_domain", "%04X" % int(pci.get("domain") or 0)),
            ("pci_base_class", "3"),
            ("pci_sub_class", "2"),
            ("pci_device_id", "%08X" % int(pci.get("device_id") or 0)),
            ("pci_bus_id", _s(pci.get("bus_id"))),
            ("pci_sub_system_id", "%08X" % int(pci.get("subsystem_id") or 0)),
            ("pci_gpu_link_info", [
                ("pcie_gen", [
                    ("max_link_gen", _s(pcie.get("max_link_gen"))),
                    ("current_link_gen", _s(pcie.get("current_link_gen"))),
                    ("device_current_link_gen", _s(pcie.get("current_link_gen"))),
                    ("max_device_link_gen", _s(pcie.get("max_link_gen"))),
                    ("max_host_link_gen", _s(pcie.get("max_link_gen"))),
                ]),
                ("link_widths", [
                    ("max_link_width", _width(pcie.get("max_link_width"))),
                    ("current_link_width", _width(pcie.get("current_link_width"))),
                ]),
            ]),
            ("pci_bridge_chip", [("bridge_chip_type", NA), ("bridge_chip_fw", NA)]),
            ("replay_counter", _s(pcie.get("replay_counter", 0))),
            ("replay_rollover_counter", "0"),
            ("tx_util", v.unit(pcie.get("tx_throughput_kbps", 0), "KB/s")),
            ("rx_util", v.unit(pcie.get("rx_throughput_kbps", 0), "KB/s")),
            ("atomic_caps_outbound", NA),
            ("atomic_caps_inbound", NA),
        ]),
        ("fan_speed", v.fan(gpu)),
        ("performance_state", pstate),
        ("clocks_event_reasons", [
            (f"clocks_event_reason_{k}", _active(reasons.get(k)))
            for k in ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                      "hw_thermal_slowdown", "hw_power_brake_slowdown", "sync_boost",
                      "sw_thermal_slowdown", "display_clocks_setting")]),
        ("clocks_event_reasons_counters", [
            (f"clocks_event_reasons_counters_{tag}", v.unit(counters.get(key), "us"))
            for tag, key in (("sw_power_cap", "sw_power_cap_us"), ("sync_boost", "sync_boost_us"),
                             ("sw_therm_slowdown", "sw_thermal_slowdown_us"),
                             ("hw_therm_slowdown", "hw_thermal_slowdown_us"),
                             ("hw_power_brake", "hw_power_brake_slowdown_us"))]),
        ("sparse_operation_mode", "Disabled" if arch == "ampere" else NA),
        ("fb_memory_usage", [(k, f"{mem[k]} MiB") for k in ("total", "reserved", "used", "free")]),
        ("bar1_memory_usage", [(k, f"{bar[k]} MiB") for k in ("total", "used", "free")]),
        ("cc_protected_memory_usage", [("total", NA), ("used", NA), ("free", NA)]),
        ("compute_mode", v.compute_mode(gpu)),
        ("utilization", [(f"{k}_util", v.unit(util.get(k), "%"))
                         for k in ("gpu", "memory", "encoder", "decoder", "jpeg", "ofa")]),
        ("encoder_stats", _stats(gpu.get("encoder_stats"))),
        ("fbc_stats", _stats(gpu.get("fbc_stats"))),
        ("dram_encryption_mode", [("current_dram_encryption", NA), ("pending_dram_encryption", NA)]),
        ("ecc_mode", [("current_ecc", v.ecc_mode(gpu)), ("pending_ecc", v.ecc_mode(gpu, "mode_pending"))]),
        ("ecc_errors", _ecc(gpu)),
        ("retired_pages", _retired(gpu)),
        ("remapped_rows", _remapped(gpu)),
        ("temperature", _temperature(gpu, thermal)),
        ("supported_gpu_target_temp", [
            ("gpu_target_temp_min", _c(thermal.get("target_temperature_c")) if v.pre_ada(gpu) else NA),
            ("gpu_target_temp_max", _c(thermal.get("target_temperature_c")) if v.pre_ada(gpu) else NA),
        ]),
        ("gpu_power_readings", [
            ("power_state", pstate),
            ("average_power_draw", v.watts(power.get("current_draw_mw"))),
            ("instant_power_draw", v.watts(power.get("current_draw_mw"))),
            ("current_power_limit", v.watts(power.get("enforced_limit_mw"))),
            ("requested_power_limit", v.watts(power.get("enforced_limit_mw"))),
            ("default_power_limit", v.watts(power.get("default_limit_mw"))),
            ("min_power_limit", v.watts(power.get("min_limit_mw"))),
            ("max_power_limit", v.watts(power.get("max_limit_mw"))),
        ]),
        ("gpu_memory_power_readings", [("average_power_draw", NA), ("instant_power_draw", NA)]),
        ("module_power_readings", [("power_state", pstate)] + [
            (k, NA) for k in ("average_power_draw", "instant_power_draw", "current_power_limit",
                              "requested_power_limit", "default_power_limit", "min_power_limit",
                              "max_power_limit")]),
        ("power_smoothing", NA),
        ("power_profiles", [("power_profile_requested_profiles", NA),
                            ("power_profile_enforced_profiles", NA)]),
        ("clocks", [("graphics_clock", _mhz(clocks.get("graphics_current"))),
                    ("sm_clock", _mhz(clocks.get("sm_current"))),
                    ("mem_clock", _mhz(clocks.get("memory_current"))),
                    ("video_clock", _mhz(clocks.get("video_current")))]),
        ("applications_clocks", [("graphics_clock", _mhz(clocks.get("graphics_app"))),
                                 ("mem_clock", _mhz(clocks.get("memory_app")))]),
        ("default_applications_clocks", [("graphics_clock", _mhz(clocks.get("graphics_app_default"))),
                                         ("mem_clock", _mhz(clocks.get("memory_app_default")))]),
        ("deferred_clocks", [("mem_clock", NA)]),
        ("max_clocks", [("graphics_clock", _mhz(clocks.get("graphics_max"))),
                        ("sm_clock", _mhz(clocks.get("sm_max"))),
                        ("mem_clock", _mhz(clocks.get("memory_max"))),
                        ("video_clock", _mhz(clocks.get("video_max")))]),
        ("max_customer_boost_clocks", [("graphics_clock", NA)]),
        ("clock_policy", [("auto_boost", NA), ("auto_boost_default", NA)]),
        ("fabric", _fabric(gpu)),
        ("supported_clocks", _supported_clocks(gpu)),
        ("processes", _processes(gpu)),
        ("accounted_processes", NA),
        ("capabilities", [("egm", NA)]),
    ]
    return tree


def _stats(block) -> list:
    block = block or {}
    return [("session_count", _s(block.get("session_count", 0))),
            ("average_fps", _s(block.get("average_fps", 0))),
            ("average_latency", _s(block.get("average_latency_us", 0)))]


def _ecc(gpu: dict) -> list:
    enabled = v.ecc_mode(gpu) == "Enabled"
    sram = v.get(gpu, "ecc.sram") if enabled else None
    sram = sram if isinstance(sram, dict) else None

    def scope(name: str) -> list:
        s = (sram or {}).get(name) or {}
        rows = [(f"sram_{k}", _s(s.get(k)) if sram else NA)
                for k in ("correctable", "uncorrectable_parity", "uncorrectable_secded")]
        rows += [("dram_correctable", _s(v.ecc_count(gpu, name, "single_bit"))),
                 ("dram_uncorrectable", _s(v.ecc_count(gpu, name, "double_bit")))]
        return rows

    aggregate = scope("aggregate") + [
        ("sram_threshold_exceeded", v.yes_no(sram.get("threshold_exceeded")) if sram else NA)]
    sources = (sram or {}).get("uncorrectable_sources") or {}
    return [
        ("volatile", scope("volatile")),
        ("aggregate", aggregate),
        ("aggregate_uncorrectable_sram_sources", [
            (f"sram_{k}", _s(sources.get(k)) if sram else NA)
            for k in ("l2", "sm", "microcontroller", "pcie", "other")]),
        ("channel_repair_pending", NA),
        ("tpc_repair_pending", NA),
    ]


def _retired(gpu: dict) -> list:
    rp = gpu.get("retired_pages") if v.pre_ada(gpu) else None
    if not isinstance(rp, dict):
        blank = [("retired_count", NA), ("retired_pagelist", NA)]
        return [("multiple_single_bit_retirement", blank), ("double_bit_retirement", list(blank)),
                ("pending_blacklist", NA), ("pending_retirement", NA)]

    def block(key: str) -> list:
        b = rp.get(key) or {}
        addresses = b.get("addresses") or []
        pagelist = "".join(f"\n\t\t\t\t\t{a}" for a in addresses) + "\n\t\t\t\t"
        return [("retired_count", _s(b.get("count", len(addresses)))), ("retired_pagelist", pagelist)]

    return [("multiple_single_bit_retirement", block("single_bit_retirement")),
            ("double_bit_retirement", block("double_bit_retirement")),
            ("pending_blacklist", v.yes_no(bool(rp.get("pending_blacklist")))),
            ("pending_retirement", v.yes_no(bool(rp.get("pending_retirement"))))]


def _remapped(gpu: dict):
    rr = gpu.get("remapped_rows")
    if not isinstance(rr, dict) or str(gpu.get("architecture") or "").lower() in (
            "kepler", "maxwell", "pascal", "volta", "turing"):
        return NA
    hist = rr.get("availability_histogram")
    histogram = [(f"row_remapper_histogram_{k}", f"{int(hist.get(k) or 0)} bank(s)")
                 for k in ("max", "high", "partial", "low", "none")] if isinstance(hist, dict) else NA
    return [("remapped_row_corr", _s(rr.get("correctable", 0))),
            ("remapped_row_unc", _s(rr.get("uncorrectable", 0))),
            ("remapped_row_pending", v.yes_no(bool(rr.get("pending")))),
            ("remapped_row_failure", v.yes_no(bool(rr.get("failure_occurred")))),
            ("row_remapper_histogram", histogram)]


def _temperature(gpu: dict, t: dict) -> list:
    temp = t.get("temperature_gpu_c")
    shutdown, slowdown, maxop = (t.get("shutdown_threshold_c"), t.get("slowdown_threshold_c"),
                                 t.get("max_operating_c"))
    if v.pre_ada(gpu):
        return [("gpu_temp", _c(temp)), ("gpu_temp_tlimit", NA),
                ("gpu_temp_max_threshold", _c(shutdown)),
                ("gpu_temp_slow_threshold", _c(slowdown)),
                ("gpu_temp_max_gpu_threshold", _c(maxop)),
                ("gpu_target_temperature", _c(t.get("target_temperature_c"))),
                ("memory_temp", _c(t.get("temperature_memory_c"))),
                ("gpu_temp_max_mem_threshold", _c(maxop))]
    # Ada and later report distances to T.Limit (taken here as the slowdown point).
    limit = slowdown

    def rel(x):
        return NA if v.is_na(x) or v.is_na(limit) else f"{int(limit) - int(x)} C"

    return [("gpu_temp", _c(temp)), ("gpu_temp_tlimit", rel(temp)),
            ("gpu_temp_max_tlimit_threshold", rel(shutdown)),
            ("gpu_temp_slow_tlimit_threshold", rel(slowdown)),
            ("gpu_temp_max_gpu_tlimit_threshold", rel(maxop)),
            ("gpu_target_temperature", NA),
            ("memory_temp", _c(t.get("temperature_memory_c"))),
            ("gpu_temp_max_mem_tlimit_threshold", NA)]


FABRIC_STATE_WORDS = {"not_supported": "Not Supported", "not_started": "Not Started",
                      "in_progress": "In Progress", "completed": "Completed"}


def _fabric(gpu: dict) -> list:
    state = v.fabric_state(gpu)
    health_tags = ("summary", "bandwidth", "route_recovery_in_progress", "route_unhealthy",
                   "access_timeout_recovery", "incorrect_configuration")
    if state == "not_supported":
        return [("state", NA), ("status", NA), ("cliqueId", NA), ("clusterUuid", NA),
                ("health", [(k, NA) for k in health_tags])]
    fabric = gpu["fabric"]
    done = state == "completed"
    health = v.fabric_health(gpu)
    return [("state", FABRIC_STATE_WORDS.get(state, v.title(state))),
            ("status", "Success" if done else NA),
            ("cliqueId", _s(fabric.get("clique_id")) if done else NA),
            ("clusterUuid", _s(fabric.get("cluster_uuid")) if done else NA),
            ("health", [(k, health[k] if done else NA) for k in health_tags])]


def _supported_clocks(gpu: dict):
    mems = v.get(gpu, "supported_clocks.memory_clocks") or []
    if not mems:
        return NA
    out = []
    for m in mems:
        rows = [("value", _mhz(m.get("freq_mhz")))]
        rows += [("supported_graphics_clock", _mhz(g)) for g in m.get("graphics_clocks") or []]
        out.append(("supported_mem_clock", rows))
    return out


def _processes(gpu: dict):
    procs = v.processes(gpu)
    if not procs:
        return "\n\t\t"
    return [("process_info", [
        ("gpu_instance_id", NA), ("compute_instance_id", NA), ("pid", str(p["pid"])),
        ("type", str(p.get("type") or "C")), ("process_name", str(p.get("name") or "")),
        ("used_memory", f"{int(p.get('used_memory_mib') or 0)} MiB")]) for p in procs]


def keep_sections(tree: list, tags: tuple) -> list:
    return [node for node in tree if node[0] in tags] if tags else tree


# --- XML --------------------------------------------------------------------------

def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _xml_nodes(nodes: list, depth: int, out: list) -> None:
    pad = "\t" * depth
    for tag, value in nodes:
        if isinstance(value, list):
            out.append(f"{pad}<{tag}>")
            _xml_nodes(value, depth + 1, out)
            out.append(f"{pad}</{tag}>")
        else:
            out.append(f"{pad}<{tag}>{_esc(value)}</{tag}>")


def render_xml(gpus: list, system: dict, timestamp: str, tags: tuple = ()) -> str:
    out = ['<?xml version="1.0" ?>', f'<!DOCTYPE nvidia_smi_log SYSTEM "{DTD}">', "<nvidia_smi_log>",
           f"\t<timestamp>{_esc(timestamp)}</timestamp>",
           f"\t<driver_version>{_esc(_s(system.get('driver_version')))}</driver_version>",
           f"\t<cuda_version>{_esc(_s(system.get('cuda_version')))}</cuda_version>",
           f"\t<attached_gpus>{len(gpus)}</attached_gpus>"]
    for gpu in gpus:
        bus = _esc(_s((gpu.get("pci") or {}).get("bus_id")))
        out.append(f'\t<gpu id="{bus}">')
        _xml_nodes(keep_sections(gpu_tree(gpu, system), tags), 2, out)
        out.append("\t</gpu>")
    out.append("</nvidia_smi_log>")
    return "\n".join(out) + "\n"
