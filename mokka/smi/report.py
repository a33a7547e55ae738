"""``nvidia-smi -q``: one tree per GPU, rendered as XML (``-x``) or as text.

The tree holds every element of nvidia-smi 570 to 595 in their order and
nesting (checked against captured ``-q -x`` documents of real boards); each node
is ``(tag, value)`` where value is a string or a list of nodes. What the node's
driver prints of it (and the DTD it names) is mokka.smi.layouts'. Text labels
come from ``textq.LABELS``. Pure: the caller passes the GPUs, versions and clock.
"""

from __future__ import annotations

from mokka.smi import gpu as g
from mokka.smi import layouts
from mokka.smi import values as v
from mokka.smi.values import NA

ADDRESSING_MODES = {0: "None", 1: "HMM", 2: "ATS"}

#: -d section names → the top-level GPU elements they keep.
SECTIONS = {
    "MEMORY": ("fb_memory_usage", "bar1_memory_usage", "cc_protected_memory_usage"),
    "UTILIZATION": ("utilization",),
    "ECC": ("ecc_mode", "ecc_errors"),
    "TEMPERATURE": ("temperature",),
    "POWER": ("gpu_power_readings", "gpu_memory_power_readings", "module_power_readings",
              "power_smoothing", "power_profiles", "edpp_multiplier"),
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
    "VOLTAGE": ("voltage",),
    "FBC_STATS": ("fbc_stats",),
    "ROW_REMAPPER": ("remapped_rows",),
    "RESET_STATUS": ("gpu_reset_status", "gpu_recovery_action"),
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


def _mhz(value) -> str:
    return v.unit(value, "MHz")


def _c(value) -> str:
    return v.unit(value, "C")


def _width(value) -> str:
    return NA if value is None else f"{value}x"


def _active(mask, bit: int) -> str:
    return NA if mask is None else ("Active" if mask & bit else "Not Active")


def _hex(value, digits: int) -> str:
    return NA if value is None else "%0*X" % (digits, value)


def _platform(gpu) -> list:
    """The rack location, and the module id (nvmlDeviceGetModuleId: a board without a
    location, an A100's HGX baseboard, has one)."""
    p = gpu.platform()
    module = ("module_id", v.text(gpu.module_id()))
    if p is None:
        return [(tag, NA) for tag in ("chassis_serial_number", "slot_number", "tray_index", "host_id",
                                      "peer_type")] + [module, ("gpu_fabric_guid", NA)]
    serial = bytes(p.chassisSerialNumber).split(b"\0", 1)[0].decode(errors="replace")
    return [("chassis_serial_number", serial or NA), ("slot_number", str(p.slotNumber)),
            ("tray_index", str(p.trayIndex)), ("host_id", str(p.hostId)),
            ("peer_type", v.word(v.PEER_TYPES, p.peerType)), module,
            ("gpu_fabric_guid", "0x" + bytes(p.ibGuid[:8]).hex())]


def _bbx(when, took) -> list:
    """The InfoROM black box's last flush: local time to the millisecond, and how long."""
    if when is None:
        return [("latest_timestamp", NA), ("latest_duration", NA)]
    import time
    stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(when // 1_000_000)) + ".%03d" % (when // 1000 % 1000)
    return [("latest_timestamp", stamp), ("latest_duration", f"{took} us")]


def _yes_no_field(value) -> str:
    return value if isinstance(value, v.Refusal) else v.yes_no(value)


def _atomics(mask) -> str:
    """NVML_PCIE_ATOMICS_CAP_* bits as nvidia-smi lists them (each word and a space)."""
    if not mask:
        return NA
    from mokka.core import names
    return "".join(f"{op} " for bit, op in enumerate(names.PCIE_ATOMIC_CAPS) if mask >> bit & 1)


def _mib_rows(block, keys) -> list:
    return [(k, NA if block is None else f"{v.mib(getattr(block, k))} MiB") for k in keys]


def _power(fields: dict, pstate: str, keys=tuple(g.FI_POWER)) -> list:
    return [("power_state", pstate)] + [(k, v.watts(fields[k])) for k in keys]


def gpu_tree(gpu, layout: layouts.Layout | None = None) -> list:
    """Every element nvidia-smi prints for one board, in its order: those of
    ``layout``'s driver (the newest's without one)."""
    layout = layout or layouts.for_driver(None)
    return layouts.prune(_tree(gpu, layout), layout)


def _tree(gpu, layout: layouts.Layout) -> list:
    pci, ext = gpu.pci(), gpu.pci_ext()
    arch = gpu.architecture()
    pstate = v.pstate(gpu.performance_state())
    mem, bar = gpu.memory(), gpu.bar1()
    util = gpu.utilization()
    reasons = gpu.clocks_event_reasons()
    counters = gpu.clocks_event_counters()
    mig_current, mig_pending = gpu.mig_mode()
    dm_current, dm_pending = gpu.driver_model()
    gom_current, gom_pending = gpu.gpu_operation_mode()
    ecc_current, ecc_pending = gpu.ecc_mode()
    low, high = gpu.power_limit_constraints()
    c2c = gpu.c2c_enabled()
    power_state = v.pstate(gpu.power_state())
    gpu_power = gpu.power_fields(g.POWER_SCOPE_GPU)
    fan_speed = gpu.fan_speed() if gpu.fan_count() else None
    display = gpu.display_mode()
    pdi = gpu.pdi()
    egm = gpu.capabilities()
    reset_required, drain_and_reset, outbound, inbound, recovery = gpu.fields(
        [g.FI_RESET_STATUS, g.FI_DRAIN_AND_RESET_STATUS, g.FI_PCIE_OUTBOUND_ATOMICS, g.FI_PCIE_INBOUND_ATOMICS,
         g.FI_GPU_RECOVERY_ACTION])

    return [
        ("product_name", v.text(gpu.name())),
        ("product_brand", v.brand(gpu.brand())),
        ("product_architecture", v.architecture(arch)),
        ("display_mode", layouts.DEPRECATED_TEXT if layout.display_mode_deprecated else v.enabled(display)),
        ("display_attached", v.yes_no(display)),
        ("display_active", v.enabled(gpu.display_active(), "Disabled")),
        ("persistence_mode", v.enabled(gpu.persistence_mode(), "Disabled")),
        ("addressing_mode", v.word(ADDRESSING_MODES, gpu.addressing_mode())),
        ("mig_mode", [("current_mig", v.enabled(mig_current)), ("pending_mig", v.enabled(mig_pending))]),
        ("mig_devices", _mig_devices(gpu)),
        ("accounting_mode", v.enabled(gpu.accounting_mode(), "Disabled")),
        ("accounting_mode_buffer_size", v.text(gpu.accounting_buffer_size())),
        ("driver_model", [("current_dm", v.word(v.DRIVER_MODELS, dm_current)),
                          ("pending_dm", v.word(v.DRIVER_MODELS, dm_pending))]),
        ("serial", v.text(gpu.serial())),
        ("uuid", v.text(gpu.uuid())),
        ("pdi", NA if pdi is None else f"0x{pdi:016x}"),
        ("minor_number", v.text(gpu.minor_number())),
        ("vbios_version", v.text(gpu.vbios_version())),
        ("multigpu_board", v.yes_no(gpu.multi_gpu_board())),
        ("board_id", NA if gpu.board_id() is None else hex(gpu.board_id())),
        ("board_part_number", v.text(gpu.board_part_number())),
        ("gpu_part_number", v.text(gpu.part_number(g.SLOT_GPU_PART_NUMBER, g.GPU_PART_NUMBER_SIZE))),
        ("gpu_fru_part_number", v.text(gpu.part_number(g.SLOT_FRU_PART_NUMBER, g.FRU_PART_NUMBER_SIZE))),
        ("platformInfo", _platform(gpu)),
        ("inforom_version", [
            ("img_version", v.text(gpu.inforom_image())),
            ("oem_object", v.text(gpu.inforom(g.INFOROM_OEM))),
            ("ecc_object", v.text(gpu.inforom(g.INFOROM_ECC))),
            ("pwr_object", v.text(gpu.inforom(g.INFOROM_POWER))),
        ]),
        ("inforom_bbx_flush", _bbx(*gpu.bbx_flush())),
        ("gpu_operation_mode", [("current_gom", v.word(v.OPERATION_MODES, gom_current)),
                                ("pending_gom", v.word(v.OPERATION_MODES, gom_pending))]),
        ("c2c_mode", NA if c2c is None else v.enabled(c2c)),
        ("gpu_virtualization_mode", [
            ("virtualization_mode", v.word(v.VIRTUALIZATION_MODES, gpu.virtualization_mode(), "None")),
            ("host_vgpu_mode", v.word(v.HOST_VGPU_MODES, gpu.host_vgpu_mode())),
            ("vgpu_heterogeneous_mode", NA),
        ]),
        ("gpu_reset_status", [("reset_required", _yes_no_field(reset_required)),
                              ("drain_and_reset_recommended", _yes_no_field(drain_and_reset))]),
        ("gpu_recovery_action", v.recovery_action(recovery)),
        ("gsp_firmware_version", v.text(gpu.gsp_firmware_version())),
        ("ibmnpu", [("relaxed_ordering_mode", NA)]),
        ("pci", [
            ("pci_bus", _hex(pci and pci.bus, 2)),
            ("pci_device", _hex(pci and pci.device, 2)),
            ("pci_domain", _hex(pci and pci.domain, 4)),
            ("pci_base_class", NA if ext is None else "%X" % ext.baseClass),
            ("pci_sub_class", NA if ext is None else "%X" % ext.subClass),
            ("pci_device_id", _hex(pci and pci.pciDeviceId, 8)),
            ("pci_bus_id", gpu.bus_id()),
            ("pci_sub_system_id", _hex(pci and pci.pciSubSystemId, 8)),
            ("pci_gpu_link_info", [
                ("pcie_gen", [
                    ("max_link_gen", v.text(gpu.pcie_max_gen())),
                    ("current_link_gen", v.text(gpu.pcie_current_gen())),
                    ("device_current_link_gen", v.text(gpu.pcie_current_gen())),
                    ("max_device_link_gen", v.text(gpu.pcie_device_max_gen())),
                    ("max_host_link_gen", v.text(gpu.pcie_host_max_gen())),
                ]),
                ("link_widths", [
                    ("max_link_width", _width(gpu.pcie_max_width())),
                    ("current_link_width", _width(gpu.pcie_current_width())),
                ]),
            ]),
            ("pci_bridge_chip", [("bridge_chip_type", NA), ("bridge_chip_fw", NA)]),
            ("replay_counter", v.text(gpu.pcie_replay_counter())),
            ("replay_rollover_counter", "0"),
            ("tx_util", v.unit(gpu.pcie_throughput(g.PCIE_TX), "KB/s")),
            ("rx_util", v.unit(gpu.pcie_throughput(g.PCIE_RX), "KB/s")),
            ("atomic_caps_outbound", _atomics(outbound)),
            ("atomic_caps_inbound", _atomics(inbound)),
        ]),
        ("fan_speed", v.unit(fan_speed, "%")),
        ("performance_state", pstate),
        ("clocks_event_reasons", [(f"clocks_event_reason_{name}", _active(reasons, bit))
                                  for name, bit in v.CLOCKS_EVENT_REASONS]),
        ("clocks_event_reasons_counters", [
            (f"clocks_event_reasons_counters_{name}", v.unit(None if ns is None else ns // 1000, "us"))
            for name, ns in counters.items()]),
        ("sparse_operation_mode", v.enabled(gpu.sparse_operation_mode())),
        ("fb_memory_usage", _mib_rows(mem, ("total", "reserved", "used", "free"))),
        ("bar1_memory_usage", _mib_rows(bar, ("total", "used", "free"))),
        ("cc_protected_memory_usage", _mib_rows(gpu.cc_protected_memory(), ("total", "used", "free"))),
        ("compute_mode", v.word(v.COMPUTE_MODES, gpu.compute_mode())),
        ("utilization", [
            ("gpu_util", v.unit(util and util.gpu, "%")),
            ("memory_util", v.unit(util and util.memory, "%"))] + [
            (tag, v.unit(gpu.engine_utilization(name), "%"))
            for tag, name in (("encoder_util", "Encoder"), ("decoder_util", "Decoder"), ("jpeg_util", "Jpg"),
                              ("ofa_util", "Ofa"))]),
        ("encoder_stats", _stats(gpu.encoder_stats())),
        ("fbc_stats", _stats(gpu.fbc_stats())),
        ("dram_encryption_mode", [("current_dram_encryption", NA), ("pending_dram_encryption", NA)]),
        ("ecc_mode", [("current_ecc", v.enabled(ecc_current)), ("pending_ecc", v.enabled(ecc_pending))]),
        ("ecc_errors", _ecc(gpu, ecc_current == g.ENABLED)),
        ("retired_pages", _retired(gpu, arch)),
        ("remapped_rows", _remapped(gpu)),
        ("temperature", _temperature(gpu, arch)),
        ("supported_gpu_target_temp", [
            ("gpu_target_temp_min", _c(gpu.temperature_threshold(g.THRESHOLD_ACOUSTIC_CURR))),
            ("gpu_target_temp_max", _c(gpu.temperature_threshold(g.THRESHOLD_ACOUSTIC_CURR))),
        ]),
        ("gpu_power_readings", [
            ("power_state", power_state),
            ("average_power_draw", v.watts(gpu_power["average_power_draw"])),
            ("instant_power_draw", v.watts(gpu_power["instant_power_draw"])),
            ("current_power_limit", v.watts(gpu.power_limit())),
            ("requested_power_limit", v.watts(gpu.power_requested_limit())),
            ("default_power_limit", v.watts(gpu.power_default_limit())),
            ("min_power_limit", v.watts(low)),
            ("max_power_limit", v.watts(high)),
        ]),
        ("gpu_memory_power_readings", _power(gpu.power_fields(g.POWER_SCOPE_MEMORY), "",
                                             ("average_power_draw", "instant_power_draw"))[1:]),
        ("module_power_readings", _power(gpu.power_fields(g.POWER_SCOPE_MODULE), power_state)),
        ("power_smoothing", NA),
        ("power_profiles", [("power_profile_requested_profiles", NA),
                            ("power_profile_enforced_profiles", NA)]),
        ("edpp_multiplier", v.text(gpu.fields([g.FI_EDPP_MULTIPLIER])[0])),
        ("clocks", [(tag, _mhz(gpu.clock(kind))) for tag, kind in CLOCK_ROWS]),
        ("applications_clocks", [(tag, _mhz(gpu.applications_clock(kind))) for tag, kind in APP_CLOCK_ROWS]),
        ("default_applications_clocks", [(tag, _mhz(gpu.default_applications_clock(kind)))
                                         for tag, kind in APP_CLOCK_ROWS]),
        ("deferred_clocks", [("mem_clock", NA)]),
        ("max_clocks", [(tag, _mhz(gpu.max_clock(kind))) for tag, kind in CLOCK_ROWS]),
        ("max_customer_boost_clocks", [("graphics_clock", _mhz(gpu.max_customer_boost_clock(g.CLOCK_GRAPHICS)))]),
        ("clock_policy", [("auto_boost", NA), ("auto_boost_default", NA)]),
        ("voltage", [("graphics_volt", NA)]),
        ("fabric", _fabric(gpu)),
        ("supported_clocks", _supported_clocks(gpu)),
        ("processes", _processes(gpu)),
        ("accounted_processes", _accounted(gpu)),
        ("capabilities", [("egm", NA if egm is None else ("enabled" if egm & g.CAP_EGM else "disabled"))]),
    ]


def _mig_devices(gpu):
    """Each MIG device as nvidia-smi 550 reports it; "None" for a GPU without."""
    devices = gpu.mig_devices()
    if not devices:
        return "\n\t\t\tNone\n\t\t"

    def one(device) -> list:
        gi, ci = device.instance_ids()
        a = device.attributes()
        mem, bar = device.memory(), device.bar1()
        shared = (("multiprocessor_count", "multiprocessorCount"), ("copy_engine_count", "sharedCopyEngineCount"),
                  ("encoder_count", "sharedEncoderCount"), ("decoder_count", "sharedDecoderCount"),
                  ("ofa_count", "sharedOfaCount"), ("jpg_count", "sharedJpegCount"))
        return [("index", str(device.index)), ("gpu_instance_id", v.text(gi)), ("compute_instance_id", v.text(ci)),
                ("device_attributes", [("shared", [(tag, NA if a is None else str(getattr(a, name)))
                                                   for tag, name in shared])]),
                ("ecc_error_count", [("volatile_count", [("sram_uncorrectable", v.text(
                    device.ecc_counter(g.UNCORRECTED, g.VOLATILE, g.LOCATION_SRAM)))])]),
                ("fb_memory_usage", _mib_rows(mem, ("total", "reserved", "used", "free"))),
                ("bar1_memory_usage", _mib_rows(bar, ("total", "used", "free")))]

    return [("mig_device", one(device)) for device in devices]


CLOCK_ROWS = (("graphics_clock", g.CLOCK_GRAPHICS), ("sm_clock", g.CLOCK_SM), ("mem_clock", g.CLOCK_MEM),
              ("video_clock", g.CLOCK_VIDEO))
APP_CLOCK_ROWS = (("graphics_clock", g.CLOCK_GRAPHICS), ("mem_clock", g.CLOCK_MEM))


def _stats(values: tuple) -> list:
    return [(tag, v.text(x)) for tag, x in zip(("session_count", "average_fps", "average_latency"), values)]


def _ecc(gpu, enabled: bool) -> list:
    sram = gpu.sram_ecc() if enabled else None
    if enabled and sram is None:
        return _ecc_unsplit(gpu)
    repair = gpu.repair_status()
    tail = [("channel_repair_pending", NA if repair is None else v.yes_no(repair.channel)),
            ("tpc_repair_pending", NA if repair is None else v.yes_no(repair.tpc)),
            ("unrepairable_memory", v.yes_no(gpu.unrepairable_memory()))]

    def dram(error_type, counter):
        return v.text(gpu.ecc_counter(error_type, counter, g.LOCATION_DEVICE_MEMORY) if enabled else None)

    def sram_rows(prefix: str) -> list:
        keys = (("correctable", "Cor"), ("uncorrectable_parity", "UncParity"),
                ("uncorrectable_secded", "UncSecDed"))
        return [(f"sram_{tag}", NA if sram is None else str(getattr(sram, prefix + name))) for tag, name in keys]

    def scope(name: str, counter: int) -> list:
        return sram_rows(name) + [("dram_correctable", dram(g.CORRECTED, counter)),
                                  ("dram_uncorrectable", dram(g.UNCORRECTED, counter))]

    buckets = (("l2", "L2"), ("sm", "Sm"), ("microcontroller", "Mcu"), ("pcie", "Pcie"), ("other", "Other"))
    return [
        ("volatile", scope("volatile", g.VOLATILE)),
        ("aggregate", scope("aggregate", g.AGGREGATE) + [
            ("sram_threshold_exceeded", NA if sram is None else v.yes_no(sram.bThresholdExceeded))]),
        ("aggregate_uncorrectable_sram_sources", [
            (f"sram_{tag}", NA if sram is None else str(getattr(sram, "aggregateUncBucket" + name)))
            for tag, name in buckets]),
    ] + tail


def _ecc_unsplit(gpu) -> list:
    """A board without the SRAM parity / SEC-DED split (before Ampere): one count each way,
    and no repair rows."""
    def scope(counter: int) -> list:
        return [(f"{memory}_{kind}", v.text(gpu.ecc_counter(error, counter, location)))
                for memory, location in (("sram", g.LOCATION_SRAM), ("dram", g.LOCATION_DEVICE_MEMORY))
                for kind, error in (("correctable", g.CORRECTED), ("uncorrectable", g.UNCORRECTED))]
    rows = scope(g.VOLATILE), scope(g.AGGREGATE)
    order = ("sram_correctable", "sram_uncorrectable", "dram_correctable", "dram_uncorrectable")
    return [(name, sorted(r, key=lambda row: order.index(row[0]))) for name, r in zip(("volatile", "aggregate"), rows)]


def _retired(gpu, arch) -> list:
    single = gpu.retired_pages(g.RETIRE_MULTIPLE_SINGLE_BIT)
    double = gpu.retired_pages(g.RETIRE_DOUBLE_BIT)
    if single is None or double is None:
        blank = [("retired_count", NA), ("retired_pagelist", NA)]
        return [("multiple_single_bit_retirement", blank), ("double_bit_retirement", list(blank)),
                ("pending_blacklist", NA), ("pending_retirement", NA)]

    def block(addresses: list) -> list:
        pagelist = "".join(f"\n\t\t\t\t\t0x{a:016x}" for a in addresses) + "\n\t\t\t\t"
        return [("retired_count", str(len(addresses))), ("retired_pagelist", pagelist)]

    pending = v.yes_no(gpu.retired_pages_pending())
    return [("multiple_single_bit_retirement", block(single)), ("double_bit_retirement", block(double)),
            ("pending_blacklist", pending), ("pending_retirement", pending)]


def _remapped(gpu):
    rows = gpu.remapped_rows()
    if rows is None:
        return NA
    corr, unc, pending, failure = rows
    corr_inactive, unc_inactive = gpu.fields(list(g.FI_REMAPPED_ROWS_INACTIVE))
    hist = gpu.row_remapper_histogram()
    histogram = NA if hist is None else [
        (f"row_remapper_histogram_{k}", f"{getattr(hist, k)} bank(s)")
        for k in ("max", "high", "partial", "low", "none")]
    return [("remapped_row_corr", str(corr)), ("remapped_row_corr_inactive", v.text(corr_inactive)),
            ("remapped_row_unc", str(unc)), ("remapped_row_unc_inactive", v.text(unc_inactive)),
            ("remapped_row_pending", v.yes_no(pending)), ("remapped_row_failure", v.yes_no(failure)),
            ("row_remapper_histogram", histogram)]


def _temperature(gpu, arch) -> list:
    memory = gpu.fields([g.FI_MEMORY_TEMP])[0]
    if v.pre_ada(arch):
        return [("gpu_temp", _c(gpu.temperature())), ("gpu_temp_tlimit", NA),
                ("gpu_temp_max_threshold", _c(gpu.temperature_threshold(g.THRESHOLD_SHUTDOWN))),
                ("gpu_temp_slow_threshold", _c(gpu.temperature_threshold(g.THRESHOLD_SLOWDOWN))),
                ("gpu_temp_max_gpu_threshold", _c(gpu.temperature_threshold(g.THRESHOLD_GPU_MAX))),
                ("gpu_target_temperature", _c(gpu.temperature_threshold(g.THRESHOLD_ACOUSTIC_CURR))),
                ("memory_temp", _c(memory)),
                ("gpu_temp_max_mem_threshold", _c(gpu.temperature_threshold(g.THRESHOLD_MEM_MAX)))]
    shutdown, slowdown, gpu_max, mem_max = gpu.fields([
        g.FI_TEMPERATURE_SHUTDOWN_TLIMIT, g.FI_TEMPERATURE_SLOWDOWN_TLIMIT, g.FI_TEMPERATURE_GPU_MAX_TLIMIT,
        g.FI_TEMPERATURE_MEM_MAX_TLIMIT])
    return [("gpu_temp", _c(gpu.temperature())), ("gpu_temp_tlimit", _c(gpu.tlimit_temperature())),
            ("gpu_temp_max_tlimit_threshold", _c(shutdown)),
            ("gpu_temp_slow_tlimit_threshold", _c(slowdown)),
            ("gpu_temp_max_gpu_tlimit_threshold", _c(gpu_max)),
            ("gpu_target_temperature", NA),
            ("memory_temp", _c(memory)),
            ("gpu_temp_max_mem_tlimit_threshold", _c(mem_max))]


HEALTH_TAGS = ("summary", "bandwidth", "route_recovery_in_progress", "route_unhealthy",
               "access_timeout_recovery", "incorrect_configuration", "partition_assigned")


def _fabric(gpu) -> list:
    info = gpu.fabric()
    if info is None or info.state == 0:
        return [("state", NA), ("status", NA), ("cliqueId", NA), ("clusterUuid", NA),
                ("health", [(k, NA) for k in HEALTH_TAGS])]
    done = info.state == v.FABRIC_COMPLETED
    mask = info.healthMask

    def flag(field, true: str = "True", false: str = "False") -> str:
        bits = v.health_flag(mask, field)          # 0: the board reports no such flag
        return NA if bits == 0 else (true if bits == v.HEALTH_TRUE else false)

    health = [("summary", v.word(v.HEALTH_SUMMARIES, info.healthSummary)),
              ("bandwidth", flag(v.HEALTH_DEGRADED_BW, "Degraded", "Full")),
              ("route_recovery_in_progress", flag(v.HEALTH_ROUTE_RECOVERY)),
              ("route_unhealthy", flag(v.HEALTH_ROUTE_UNHEALTHY)),
              ("access_timeout_recovery", flag(v.HEALTH_ACCESS_TIMEOUT_RECOVERY)),
              ("incorrect_configuration", v.word(v.INCORRECT_CONFIGURATIONS,
                                                 v.health_flag(mask, v.HEALTH_INCORRECT_CONFIGURATION))),
              ("partition_assigned", v.word(v.TRUE_FALSE, v.health_flag(mask, v.HEALTH_PARTITION_ASSIGNED)))]
    return [("state", v.FABRIC_STATES.get(info.state, (NA,))[0]),
            ("status", "Success" if done and info.status == 0 else NA),
            ("cliqueId", str(info.cliqueId) if done else NA),
            ("clusterUuid", v.uuid_text(info.clusterUuid) if done else NA),
            ("health", [(k, value if done else NA) for k, value in health])]


def _supported_clocks(gpu):
    clocks = gpu.supported_clocks()
    if not clocks:
        return NA
    return [("supported_mem_clock", [("value", _mhz(mem))] + [("supported_graphics_clock", _mhz(gr))
                                                              for gr in graphics])
            for mem, graphics in clocks]


def _processes(gpu):
    procs = [p for p in gpu.processes() if p[0]]
    if not procs:
        return "\n\t\t"
    return [("process_info", [
        ("gpu_instance_id", NA), ("compute_instance_id", NA), ("pid", str(pid)), ("type", kind),
        ("process_name", name), ("used_memory", f"{v.mib(used)} MiB")]) for pid, used, kind, name in procs]


def _accounted(gpu):
    if gpu.accounted_pids() is None:
        return NA
    procs = gpu.accounted()
    if not procs:
        return "\n\t\t"
    return [("accounted_process_info", [
        ("pid", str(pid)), ("gpu_util", f"{util} %"), ("memory_util", f"{mem} %"),
        ("max_memory_usage", f"{v.mib(used)} MiB"), ("time", f"{ms} ms"), ("is_running", str(running))])
        for pid, util, mem, used, ms, running in procs]


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


#: The rows NVIDIA's nvidia-smi reads from its export table (mokka.smi.gpu's SLOT_*): another
#: driver's table has other slots, so a library that is not the mock cannot say them.
EXPORT_TABLE_ROWS = ("gpu_part_number", "gpu_fru_part_number", "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen",
                     "sparse_operation_mode", "temperature/gpu_temp_tlimit")


def render_xml(gpus: list, head: dict, timestamp: str, tags: tuple = (), without: tuple = ()) -> str:
    """``head``: driver_version, cuda_version and attached (every GPU this process sees);
    ``without``: element paths left out (EXPORT_TABLE_ROWS)."""
    layout = layouts.for_driver(head["driver_version"], without)
    out = ['<?xml version="1.0" ?>', f'<!DOCTYPE nvidia_smi_log SYSTEM "{layout.dtd}">', "<nvidia_smi_log>",
           f"\t<timestamp>{_esc(timestamp)}</timestamp>",
           f"\t<driver_version>{_esc(v.text(head['driver_version']))}</driver_version>",
           f"\t<cuda_version>{_esc(v.text(head['cuda_version']))}</cuda_version>",
           f"\t<attached_gpus>{head['attached']}</attached_gpus>"]
    for gpu in gpus:
        out.append(f'\t<gpu id="{_esc(gpu.bus_id())}">')
        _xml_nodes(keep_sections(gpu_tree(gpu, layout), tags), 2, out)
        out.append("\t</gpu>")
    out.append("</nvidia_smi_log>")
    return "\n".join(out) + "\n"
