"""``--query-gpu`` and ``--query-compute-apps`` with ``--format=csv[,noheader][,nounits]``.

Each field is (unit, getter); a getter returns the bare value or None for
``[N/A]``. Names and aliases follow ``nvidia-smi --help-query-gpu``.
"""

from __future__ import annotations

from mokka.smi import report
from mokka.smi import values as v


class QueryError(Exception):
    """Printed verbatim; exit status 2 (NVML_ERROR_INVALID_ARGUMENT)."""


def _g(path):
    return lambda gpu, ctx: v.get(gpu, path)


def _word(path, default="Disabled"):
    return lambda gpu, ctx: v.word(v.get(gpu, path), default)


def _mem(key):
    return lambda gpu, ctx: v.memory_mib(gpu)[key]


def _watts(key):
    def get(gpu, ctx):
        return v.watts_number(v.get(gpu, f"power.{key}"))
    return get


def _reason(key):
    return lambda gpu, ctx: "Active" if v.get(gpu, f"clocks_throttle_reasons.{key}") else "Not Active"


def _counter(key):
    return lambda gpu, ctx: v.get(gpu, f"clocks_throttle_reasons.counters.{key}")


def _ecc(kind, scope, where):
    def get(gpu, ctx):
        if where == "sram":
            value = v.get(gpu, f"ecc.sram.{scope}.{'correctable' if kind == 'single_bit' else 'uncorrectable_secded'}")
            return None if v.ecc_mode(gpu) != "Enabled" else value
        return v.ecc_count(gpu, scope, kind, where)
    return get


def _fabric(key):
    def get(gpu, ctx):
        tree = dict(report._fabric(gpu))
        value = tree.get(key)
        return None if value in (None, v.NA) else value
    return get


def _na(gpu, ctx):
    return None


def _hex(path, width):
    return lambda gpu, ctx: "0x%0*X" % (width, int(v.get(gpu, path) or 0))


def _pstate(gpu, ctx):
    return gpu.get("performance_state") or v.get(gpu, "power.power_state")


def _fan(gpu, ctx):
    text = v.fan(gpu)
    return None if text == v.NA else text.split()[0]


FIELDS: dict = {}
ALIASES: dict = {}


def field(names: str, unit, getter):
    canonical, *aliases = names.split("|")
    FIELDS[canonical] = (unit, getter)
    for alias in aliases:
        ALIASES[alias] = canonical


field("timestamp", None, lambda g, c: c["timestamp_csv"])
field("driver_version", None, lambda g, c: c["system"].get("driver_version"))
field("vgpu_driver_capability.heterogenous_multivGPU", None, _na)
field("count", None, lambda g, c: c["count"])
field("name|gpu_name", None, _g("name"))
field("serial|gpu_serial", None, _g("serial"))
field("uuid|gpu_uuid", None, _g("uuid"))
field("pci.bus_id|gpu_bus_id", None, _g("pci.bus_id"))
field("pci.domain", None, _hex("pci.domain", 4))
field("pci.bus", None, _hex("pci.bus", 2))
field("pci.device", None, _hex("pci.device", 2))
field("pci.baseClass", None, lambda g, c: "0x3")
field("pci.subClass", None, lambda g, c: "0x2")
field("pci.device_id", None, _hex("pci.device_id", 8))
field("pci.sub_device_id", None, _hex("pci.subsystem_id", 8))
field("pcie.link.gen.current|pcie.link.gen.gpucurrent", None, _g("pcie.current_link_gen"))
field("pcie.link.gen.max|pcie.link.gen.gpumax|pcie.link.gen.hostmax", None, _g("pcie.max_link_gen"))
field("pcie.link.width.current", None, _g("pcie.current_link_width"))
field("pcie.link.width.max", None, _g("pcie.max_link_width"))
field("index", None, lambda g, c: g["index"])
field("display_mode", None, _word("display.mode"))
field("display_attached", None, lambda g, c: "No")
field("display_active", None, _word("display.active"))
field("persistence_mode", None, lambda g, c: v.persistence(g))
field("addressing_mode", None, _na)
field("accounting.mode", None, _word("accounting.mode"))
field("accounting.buffer_size", None, _g("accounting.buffer_size"))
field("driver_model.current", None, _na)
field("driver_model.pending", None, _na)
field("vbios_version", None, _g("vbios_version"))
field("inforom.img|inforom.image", None, _g("inforom.image_version"))
field("inforom.oem", None, _g("inforom.oem_object"))
field("inforom.ecc", None, _g("inforom.ecc_object"))
field("inforom.pwr|inforom.power", None, _g("inforom.pwr_object"))
field("reset_status.reset_required", None, lambda g, c: "No")
field("reset_status.drain_and_reset_recommended", None, lambda g, c: "No")
field("gom.current|gpu_operation_mode.current", None,
      lambda g, c: v.title(v.get(g, "gpu_operation_mode.current"), None))
field("gom.pending|gpu_operation_mode.pending", None,
      lambda g, c: v.title(v.get(g, "gpu_operation_mode.pending"), None))
field("fan.speed", "%", _fan)
field("pstate", None, _pstate)
for _k in ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
           "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "sync_boost"):
    field(f"clocks_throttle_reasons.{_k}|clocks_event_reasons.{_k}", None, _reason(_k))
field("clocks_throttle_reasons.supported|clocks_event_reasons.supported", None, lambda g, c: "0x00000000000001FF")
field("clocks_throttle_reasons.active|clocks_event_reasons.active", None,
      lambda g, c: "0x%016X" % sum(1 << i for i, k in enumerate(
          ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
           "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
           "display_clocks_setting")) if v.get(g, f"clocks_throttle_reasons.{k}")))
for _n, _k in (("sw_power_cap", "sw_power_cap_us"), ("sync_boost", "sync_boost_us"),
               ("sw_thermal_slowdown", "sw_thermal_slowdown_us"),
               ("hw_thermal_slowdown", "hw_thermal_slowdown_us"),
               ("hw_power_brake_slowdown", "hw_power_brake_slowdown_us")):
    field(f"clocks_event_reasons_counters.{_n}", "us", _counter(_k))
field("memory.total", "MiB", _mem("total"))
field("memory.reserved", "MiB", _mem("reserved"))
field("memory.used", "MiB", _mem("used"))
field("memory.free", "MiB", _mem("free"))
field("compute_mode", None, lambda g, c: v.compute_mode(g))
field("compute_cap", None, lambda g, c: "%s.%s" % (v.get(g, "compute_capability.major"),
                                                    v.get(g, "compute_capability.minor")))
for _k in ("gpu", "memory", "encoder", "decoder", "jpeg", "ofa"):
    field(f"utilization.{_k}", "%", _g(f"utilization.{_k}"))
field("encoder.stats.sessionCount", None, _g("encoder_stats.session_count"))
field("encoder.stats.averageFps", None, _g("encoder_stats.average_fps"))
field("encoder.stats.averageLatency", None, _g("encoder_stats.average_latency_us"))
field("ecc.mode.current", None, lambda g, c: v.ecc_mode(g))
field("ecc.mode.pending", None, lambda g, c: v.ecc_mode(g, "mode_pending"))
for _kind, _word_ in (("single_bit", "corrected"), ("double_bit", "uncorrected")):
    for _scope in ("volatile", "aggregate"):
        for _where in ("device_memory", "register_file", "l1_cache", "l2_cache", "texture_memory", "total"):
            names = f"ecc.errors.{_word_}.{_scope}.{_where}"
            if _where == "device_memory":
                names += f"|ecc.errors.{_word_}.{_scope}.dram"
            field(names, None, _ecc(_kind, _scope, _where))
        field(f"ecc.errors.{_word_}.{_scope}.sram", None, _ecc(_kind, _scope, "sram"))
        field(f"ecc.errors.{_word_}.{_scope}.cbu", None, _na)
field("retired_pages.single_bit_ecc.count|retired_pages.sbe", None,
      lambda g, c: v.get(g, "retired_pages.single_bit_retirement.count") if v.pre_ada(g) else None)
field("retired_pages.double_bit.count|retired_pages.dbe", None,
      lambda g, c: v.get(g, "retired_pages.double_bit_retirement.count") if v.pre_ada(g) else None)
field("retired_pages.pending", None,
      lambda g, c: v.yes_no(bool(v.get(g, "retired_pages.pending_retirement"))) if v.pre_ada(g) else None)
field("remapped_rows.correctable", None, _g("remapped_rows.correctable"))
field("remapped_rows.uncorrectable", None, _g("remapped_rows.uncorrectable"))
field("remapped_rows.pending", None, lambda g, c: v.yes_no(bool(v.get(g, "remapped_rows.pending"))))
field("remapped_rows.failure", None, lambda g, c: v.yes_no(bool(v.get(g, "remapped_rows.failure_occurred"))))
field("temperature.gpu", None, _g("thermal.temperature_gpu_c"))
field("temperature.gpu.tlimit", None, lambda g, c: None if v.pre_ada(g) else (
    int(v.get(g, "thermal.slowdown_threshold_c") or 0) - int(v.get(g, "thermal.temperature_gpu_c") or 0)))
field("temperature.memory", None, _g("thermal.temperature_memory_c"))
field("power.management", None, lambda g, c: "Enabled" if v.get(g, "power.management_supported") else "Disabled")
field("power.draw|power.draw.average|power.draw.instant", "W", _watts("current_draw_mw"))
field("power.limit|enforced.power.limit", "W", _watts("enforced_limit_mw"))
field("power.default_limit", "W", _watts("default_limit_mw"))
field("power.min_limit", "W", _watts("min_limit_mw"))
field("power.max_limit", "W", _watts("max_limit_mw"))
field("clocks.current.graphics|clocks.gr", "MHz", _g("clocks.graphics_current"))
field("clocks.current.sm|clocks.sm", "MHz", _g("clocks.sm_current"))
field("clocks.current.memory|clocks.mem", "MHz", _g("clocks.memory_current"))
field("clocks.current.video|clocks.video", "MHz", _g("clocks.video_current"))
field("clocks.applications.graphics|clocks.applications.gr", "MHz", _g("clocks.graphics_app"))
field("clocks.applications.memory|clocks.applications.mem", "MHz", _g("clocks.memory_app"))
field("clocks.default_applications.graphics|clocks.default_applications.gr", "MHz",
      _g("clocks.graphics_app_default"))
field("clocks.default_applications.memory|clocks.default_applications.mem", "MHz",
      _g("clocks.memory_app_default"))
field("clocks.max.graphics|clocks.max.gr", "MHz", _g("clocks.graphics_max"))
field("clocks.max.sm", "MHz", _g("clocks.sm_max"))
field("clocks.max.memory|clocks.max.mem", "MHz", _g("clocks.memory_max"))
field("mig.mode.current", None, lambda g, c: None if v.mig_mode(g) == v.NA else v.mig_mode(g))
field("mig.mode.pending", None, lambda g, c: None if v.mig_mode(g) == v.NA else v.mig_mode(g, "mode_pending"))
field("gsp.mode.current|gsp.mode.default", None, _word("gsp_firmware.mode", None))
field("fabric.state", None, _fabric("state"))
field("fabric.status", None, _fabric("status"))
field("fabric.cliqueId", None, _fabric("cliqueId"))
field("fabric.clusterUuid", None, _fabric("clusterUuid"))
field("platform.chassis_serial_number", None, _g("platform.chassis_serial_number"))
field("platform.slot_number", None, _g("platform.slot_number"))
field("platform.tray_index", None, _g("platform.tray_index"))
field("platform.host_id", None, _g("platform.host_id"))
field("platform.peer_type", None, lambda g, c: v.title(v.get(g, "platform.peer_type"), None))
field("platform.module_id", None, _g("platform.module_id"))

APP_FIELDS = {
    "timestamp": (None, lambda g, p, c: c["timestamp_csv"]),
    "gpu_name": (None, lambda g, p, c: g.get("name")),
    "gpu_bus_id": (None, lambda g, p, c: v.get(g, "pci.bus_id")),
    "gpu_serial": (None, lambda g, p, c: g.get("serial")),
    "gpu_uuid": (None, lambda g, p, c: g.get("uuid")),
    "pid": (None, lambda g, p, c: p.get("pid")),
    "process_name|name": (None, lambda g, p, c: p.get("name")),
    "used_gpu_memory|used_memory": ("MiB", lambda g, p, c: p.get("used_memory_mib")),
}
APP_ALIASES = {}
for _names in list(APP_FIELDS):
    _c, *_a = _names.split("|")
    APP_FIELDS[_c] = APP_FIELDS.pop(_names)
    for _x in _a:
        APP_ALIASES[_x] = _c


def parse_format(text: str | None) -> tuple[bool, bool]:
    """(header, units) from a --format value; QueryError unless csv is named."""
    parts = [p.strip().lower() for p in (text or "").split(",") if p.strip()]
    if "csv" not in parts or any(p not in ("csv", "noheader", "nounits") for p in parts):
        raise QueryError("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
    return "noheader" not in parts, "nounits" not in parts


def _resolve(names: str, table: dict, aliases: dict) -> list:
    out = []
    for raw in names.split(","):
        name = raw.strip()
        if not name:
            continue
        canonical = name if name in table else aliases.get(name)
        if canonical is None:
            raise QueryError(f'Field "{name}" is not a valid field to query.')
        out.append((name, table[canonical]))
    return out


def _cell(value, unit, units: bool) -> str:
    if value is None or v.is_na(value):
        return "[N/A]"
    if unit and units:
        return f"{value} {unit}"
    return str(value)


def _header(names: list) -> str:
    return ", ".join(f"{n} [{u}]" if u else n for n, (u, _) in names)


def gpu_csv(gpus: list, fields: str, fmt: str, ctx: dict) -> str:
    cols = _resolve(fields, FIELDS, ALIASES)
    header, units = parse_format(fmt)
    lines = [_header(cols)] if header else []
    for gpu in gpus:
        lines.append(", ".join(_cell(get(gpu, ctx), unit, units) for _, (unit, get) in cols))
    return "".join(line + "\n" for line in lines)


def apps_csv(gpus: list, fields: str, fmt: str, ctx: dict) -> str:
    cols = _resolve(fields, APP_FIELDS, APP_ALIASES)
    header, units = parse_format(fmt)
    lines = [_header(cols)] if header else []
    for gpu in gpus:
        for proc in v.processes(gpu):
            lines.append(", ".join(_cell(get(gpu, proc, ctx), unit, units) for _, (unit, get) in cols))
    return "".join(line + "\n" for line in lines)


def help_text() -> str:
    out = ['List of valid properties to query for the switch "--query-gpu":', ""]
    reverse: dict = {}
    for alias, canonical in ALIASES.items():
        reverse.setdefault(canonical, []).append(alias)
    for name in FIELDS:
        out.append(" or ".join(f'"{n}"' for n in [name] + reverse.get(name, [])))
    return "\n".join(out) + "\n"
