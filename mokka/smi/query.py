"""``--query-gpu``, ``--query-compute-apps`` and ``--query-accounted-apps`` with
``--format=csv[,noheader][,nounits]``.

Each field is (unit, getter); a getter returns the bare value or None for
``[N/A]``. Names and aliases follow ``nvidia-smi --help-query-gpu``.
"""

from __future__ import annotations

from mokka.smi import gpu as g
from mokka.smi import report
from mokka.smi import values as v


class QueryError(Exception):
    """Printed verbatim; exit status 2 (NVML_ERROR_INVALID_ARGUMENT)."""


def _na(gpu, ctx):
    return None


def _hex(get, width: int):
    def read(gpu, ctx):
        value = get(gpu)
        return None if value is None else "0x%0*X" % (width, value)
    return read


def _pci(attr: str):
    def read(gpu):
        pci = gpu.pci()
        return None if pci is None else getattr(pci, attr)
    return read


def _reset_status(field_id: int):
    """Yes when the field (which the GPU's recovery action sets) says so; No otherwise, a
    field the board refuses included."""
    def read(gpu, ctx):
        (value,) = gpu.fields([field_id])
        return "Yes" if value is not None and not isinstance(value, v.Refusal) and value else "No"
    return read


def _enabled(get, default=None):
    return lambda gpu, ctx: v.enabled(get(gpu), default) if get(gpu) is not None else default


def _mem(key: str):
    def read(gpu, ctx):
        mem = gpu.memory()
        return None if mem is None else v.mib(getattr(mem, key))
    return read


def _watts(get):
    return lambda gpu, ctx: v.watts_number(get(gpu))


def _reason(bit: int):
    def read(gpu, ctx):
        mask = gpu.clocks_event_reasons()
        return None if mask is None else ("Active" if mask & bit else "Not Active")
    return read


def _counter(name: str):
    def read(gpu, ctx):
        ns = gpu.clocks_event_counters()[name]
        return None if ns is None else ns // 1000
    return read


def _ecc(error_type: int, counter: int, location: int | None):
    def read(gpu, ctx):
        if gpu.ecc_mode()[0] != g.ENABLED:
            return None
        if location is None:
            return gpu.ecc_total(error_type, counter)
        return gpu.ecc_counter(error_type, counter, location)
    return read


def _sram(error_type: int, counter: int):
    def read(gpu, ctx):
        if gpu.ecc_mode()[0] != g.ENABLED:
            return None
        return gpu.ecc_counter(error_type, counter, g.LOCATION_SRAM)
    return read


def _fabric(key):
    def read(gpu, ctx):
        value = dict(report._fabric(gpu)).get(key)
        return None if value in (None, v.NA) else value
    return read


def _platform(key):
    def read(gpu, ctx):
        value = dict(report._platform(gpu)).get(key)
        return None if value in (None, v.NA) else value
    return read


def _fan(gpu, ctx):
    return gpu.fan_speed() if gpu.fan_count() else None


def _tlimit(gpu, ctx):
    return None if v.pre_ada(gpu.architecture()) else gpu.tlimit_temperature()


def _retired_count(cause: int):
    def read(gpu, ctx):
        pages = gpu.retired_pages(cause)
        return None if pages is None else len(pages)
    return read


def _remapped(i: int, words: bool = False):
    def read(gpu, ctx):
        rows = gpu.remapped_rows()
        if rows is None:
            return None
        return v.yes_no(rows[i]) if words else rows[i]
    return read


def _utilization(attr: str):
    def read(gpu, ctx):
        util = gpu.utilization()
        return None if util is None else getattr(util, attr)
    return read


def _mig(i: int):
    def read(gpu, ctx):
        mode = gpu.mig_mode()[i]
        return None if mode is None else v.enabled(mode)
    return read


FIELDS: dict = {}
ALIASES: dict = {}


def field(names: str, unit, getter):
    canonical, *aliases = names.split("|")
    FIELDS[canonical] = (unit, getter)
    for alias in aliases:
        ALIASES[alias] = canonical


field("timestamp", None, lambda gpu, c: c["timestamp_csv"])
field("driver_version", None, lambda gpu, c: c["driver_version"])
field("vgpu_driver_capability.heterogenous_multivGPU", None, _na)
field("count", None, lambda gpu, c: c["count"])
field("name|gpu_name", None, lambda gpu, c: gpu.name())
field("serial|gpu_serial", None, lambda gpu, c: gpu.serial())
field("uuid|gpu_uuid", None, lambda gpu, c: gpu.uuid())
field("pci.bus_id|gpu_bus_id", None, lambda gpu, c: gpu.bus_id())
field("pci.domain", None, _hex(_pci("domain"), 4))
field("pci.bus", None, _hex(_pci("bus"), 2))
field("pci.device", None, _hex(_pci("device"), 2))
field("pci.baseClass", None, _hex(lambda gpu: gpu.pci_ext() and gpu.pci_ext().baseClass, 1))
field("pci.subClass", None, _hex(lambda gpu: gpu.pci_ext() and gpu.pci_ext().subClass, 1))
field("pci.device_id", None, _hex(_pci("pciDeviceId"), 8))
field("pci.sub_device_id", None, _hex(_pci("pciSubSystemId"), 8))
field("pcie.link.gen.current|pcie.link.gen.gpucurrent", None, lambda gpu, c: gpu.pcie_current_gen())
field("pcie.link.gen.max|pcie.link.gen.gpumax", None, lambda gpu, c: gpu.pcie_max_gen())
field("pcie.link.gen.hostmax", None, lambda gpu, c: gpu.pcie_host_max_gen())
field("pcie.link.width.current", None, lambda gpu, c: gpu.pcie_current_width())
field("pcie.link.width.max", None, lambda gpu, c: gpu.pcie_max_width())
field("index", None, lambda gpu, c: gpu.index)
field("display_mode", None, _enabled(lambda gpu: gpu.display_mode()))
field("display_attached", None, lambda gpu, c: "No")
field("display_active", None, _enabled(lambda gpu: gpu.display_active()))
field("persistence_mode", None, _enabled(lambda gpu: gpu.persistence_mode(), "Disabled"))
field("addressing_mode", None, _na)
field("accounting.mode", None, _enabled(lambda gpu: gpu.accounting_mode()))
field("accounting.buffer_size", None, lambda gpu, c: gpu.accounting_buffer_size())
field("driver_model.current", None, lambda gpu, c: v.word(v.DRIVER_MODELS, gpu.driver_model()[0], None))
field("driver_model.pending", None, lambda gpu, c: v.word(v.DRIVER_MODELS, gpu.driver_model()[1], None))
field("vbios_version", None, lambda gpu, c: gpu.vbios_version())
field("inforom.img|inforom.image", None, lambda gpu, c: gpu.inforom_image())
field("inforom.oem", None, lambda gpu, c: gpu.inforom(g.INFOROM_OEM))
field("inforom.ecc", None, lambda gpu, c: gpu.inforom(g.INFOROM_ECC))
field("inforom.pwr|inforom.power", None, lambda gpu, c: gpu.inforom(g.INFOROM_POWER))
field("reset_status.reset_required", None, _reset_status(g.FI_RESET_STATUS))
field("reset_status.drain_and_reset_recommended", None, _reset_status(g.FI_DRAIN_AND_RESET_STATUS))
field("gom.current|gpu_operation_mode.current", None,
      lambda gpu, c: v.word(v.OPERATION_MODES, gpu.gpu_operation_mode()[0], None))
field("gom.pending|gpu_operation_mode.pending", None,
      lambda gpu, c: v.word(v.OPERATION_MODES, gpu.gpu_operation_mode()[1], None))
field("fan.speed", "%", _fan)
field("pstate", None, lambda gpu, c: None if gpu.performance_state() is None else v.pstate(gpu.performance_state()))
for _k, _bit in v.CLOCKS_EVENT_REASONS:
    if _k != "display_clocks_setting":
        field(f"clocks_throttle_reasons.{_k}|clocks_event_reasons.{_k}", None, _reason(_bit))
field("clocks_throttle_reasons.supported|clocks_event_reasons.supported", None,
      _hex(lambda gpu: gpu.clocks_event_reasons_supported(), 16))
field("clocks_throttle_reasons.active|clocks_event_reasons.active", None,
      _hex(lambda gpu: gpu.clocks_event_reasons(), 16))
for _n, _k in (("sw_power_cap", "sw_power_cap"), ("sync_boost", "sync_boost"),
               ("sw_thermal_slowdown", "sw_therm_slowdown"), ("hw_thermal_slowdown", "hw_therm_slowdown"),
               ("hw_power_brake_slowdown", "hw_power_brake")):
    field(f"clocks_event_reasons_counters.{_n}", "us", _counter(_k))
field("memory.total", "MiB", _mem("total"))
field("memory.reserved", "MiB", _mem("reserved"))
field("memory.used", "MiB", _mem("used"))
field("memory.free", "MiB", _mem("free"))
field("compute_mode", None, lambda gpu, c: v.word(v.COMPUTE_MODES, gpu.compute_mode(), None))
field("compute_cap", None, lambda gpu, c: None if gpu.compute_capability()[0] is None
      else "%d.%d" % gpu.compute_capability())
field("utilization.gpu", "%", _utilization("gpu"))
field("utilization.memory", "%", _utilization("memory"))
for _k, _name in (("encoder", "Encoder"), ("decoder", "Decoder"), ("jpeg", "Jpg"), ("ofa", "Ofa")):
    field(f"utilization.{_k}", "%", (lambda name: lambda gpu, c: gpu.engine_utilization(name))(_name))
field("encoder.stats.sessionCount", None, lambda gpu, c: gpu.encoder_stats()[0])
field("encoder.stats.averageFps", None, lambda gpu, c: gpu.encoder_stats()[1])
field("encoder.stats.averageLatency", None, lambda gpu, c: gpu.encoder_stats()[2])
field("ecc.mode.current", None, lambda gpu, c: None if gpu.ecc_mode()[0] is None else v.enabled(gpu.ecc_mode()[0]))
field("ecc.mode.pending", None, lambda gpu, c: None if gpu.ecc_mode()[1] is None else v.enabled(gpu.ecc_mode()[1]))
_LOCATIONS = (("device_memory", 2), ("register_file", 3), ("l1_cache", 0), ("l2_cache", 1),
              ("texture_memory", 4), ("total", None))
for _type, _word_ in ((g.CORRECTED, "corrected"), (g.UNCORRECTED, "uncorrected")):
    for _counter_, _scope in ((g.VOLATILE, "volatile"), (g.AGGREGATE, "aggregate")):
        for _where, _location in _LOCATIONS:
            _names = f"ecc.errors.{_word_}.{_scope}.{_where}"
            if _where == "device_memory":
                _names += f"|ecc.errors.{_word_}.{_scope}.dram"
            field(_names, None, _ecc(_type, _counter_, _location))
        field(f"ecc.errors.{_word_}.{_scope}.sram", None, _sram(_type, _counter_))
        field(f"ecc.errors.{_word_}.{_scope}.cbu", None, _na)
field("retired_pages.single_bit_ecc.count|retired_pages.sbe", None, _retired_count(g.RETIRE_MULTIPLE_SINGLE_BIT))
field("retired_pages.double_bit.count|retired_pages.dbe", None, _retired_count(g.RETIRE_DOUBLE_BIT))
field("retired_pages.pending", None, lambda gpu, c: None if gpu.retired_pages(0) is None
      else v.yes_no(gpu.retired_pages_pending()))
field("remapped_rows.correctable", None, _remapped(0))
field("remapped_rows.uncorrectable", None, _remapped(1))
field("remapped_rows.pending", None, _remapped(2, words=True))
field("remapped_rows.failure", None, _remapped(3, words=True))
field("temperature.gpu", None, lambda gpu, c: gpu.temperature())
field("temperature.gpu.tlimit", None, _tlimit)
field("temperature.memory", None, lambda gpu, c: gpu.fields([g.FI_MEMORY_TEMP])[0])
field("power.management", None, _enabled(lambda gpu: gpu.power_management_mode()))
field("power.draw|power.draw.average|power.draw.instant", "W", _watts(lambda gpu: gpu.power_usage()))
field("power.limit|enforced.power.limit", "W", _watts(lambda gpu: gpu.power_limit()))
field("power.default_limit", "W", _watts(lambda gpu: gpu.power_default_limit()))
field("power.min_limit", "W", _watts(lambda gpu: gpu.power_limit_constraints()[0]))
field("power.max_limit", "W", _watts(lambda gpu: gpu.power_limit_constraints()[1]))
for _names, _kind in (("clocks.current.graphics|clocks.gr", g.CLOCK_GRAPHICS),
                      ("clocks.current.sm|clocks.sm", g.CLOCK_SM),
                      ("clocks.current.memory|clocks.mem", g.CLOCK_MEM),
                      ("clocks.current.video|clocks.video", g.CLOCK_VIDEO)):
    field(_names, "MHz", (lambda kind: lambda gpu, c: gpu.clock(kind))(_kind))
for _names, _kind in (("graphics|gr", g.CLOCK_GRAPHICS), ("memory|mem", g.CLOCK_MEM)):
    _long, _short = _names.split("|")
    field(f"clocks.applications.{_long}|clocks.applications.{_short}", "MHz",
          (lambda kind: lambda gpu, c: gpu.applications_clock(kind))(_kind))
    field(f"clocks.default_applications.{_long}|clocks.default_applications.{_short}", "MHz",
          (lambda kind: lambda gpu, c: gpu.default_applications_clock(kind))(_kind))
field("clocks.max.graphics|clocks.max.gr", "MHz", lambda gpu, c: gpu.max_clock(g.CLOCK_GRAPHICS))
field("clocks.max.sm", "MHz", lambda gpu, c: gpu.max_clock(g.CLOCK_SM))
field("clocks.max.memory|clocks.max.mem", "MHz", lambda gpu, c: gpu.max_clock(g.CLOCK_MEM))
field("mig.mode.current", None, _mig(0))
field("mig.mode.pending", None, _mig(1))
field("gsp.mode.current|gsp.mode.default", None, _enabled(lambda gpu: gpu.gsp_firmware_mode()))
field("fabric.state", None, _fabric("state"))
field("fabric.status", None, _fabric("status"))
field("fabric.cliqueId", None, _fabric("cliqueId"))
field("fabric.clusterUuid", None, _fabric("clusterUuid"))
for _k in ("chassis_serial_number", "slot_number", "tray_index", "host_id", "peer_type", "module_id"):
    field(f"platform.{_k}", None, _platform(_k))

APP_FIELDS = {
    "timestamp": (None, lambda gpu, p, c: c["timestamp_csv"]),
    "gpu_name": (None, lambda gpu, p, c: gpu.name()),
    "gpu_bus_id": (None, lambda gpu, p, c: gpu.bus_id()),
    "gpu_serial": (None, lambda gpu, p, c: gpu.serial()),
    "gpu_uuid": (None, lambda gpu, p, c: gpu.uuid()),
    "pid": (None, lambda gpu, p, c: p[0]),
    "process_name|name": (None, lambda gpu, p, c: p[3]),
    "used_gpu_memory|used_memory": ("MiB", lambda gpu, p, c: v.mib(p[1])),
}
APP_ALIASES = {}
for _names in list(APP_FIELDS):
    _c, *_a = _names.split("|")
    APP_FIELDS[_c] = APP_FIELDS.pop(_names)
    for _x in _a:
        APP_ALIASES[_x] = _c


#: --query-accounted-apps: an accounted process is gpu.accounted()'s row (pid, GPU %, memory %,
#: bytes, ms, running). A header names the canonical field, as NVIDIA's does.
ACCOUNTED_FIELDS = {
    "timestamp": (None, lambda gpu, p, c: c["timestamp_csv"]),
    "gpu_name": (None, lambda gpu, p, c: gpu.name()),
    "gpu_bus_id": (None, lambda gpu, p, c: gpu.bus_id()),
    "gpu_serial": (None, lambda gpu, p, c: gpu.serial()),
    "gpu_uuid": (None, lambda gpu, p, c: gpu.uuid()),
    "vgpu_instance": (None, None),                # no vGPU: "N/A", unbracketed as NVIDIA's prints it
    "pid": (None, lambda gpu, p, c: p[0]),
    "gpu_utilization": ("%", lambda gpu, p, c: p[1]),
    "mem_utilization": ("%", lambda gpu, p, c: p[2]),
    "max_memory_usage": ("MiB", lambda gpu, p, c: v.mib(p[3])),
    "time": ("ms", lambda gpu, p, c: p[4]),
}
ACCOUNTED_ALIASES = {"gpu_util": "gpu_utilization", "mem_util": "mem_utilization"}


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
    if value is None or value == v.NA:
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
        for proc in (p for p in gpu.processes() if p[0]):
            lines.append(", ".join(_cell(get(gpu, proc, ctx), unit, units) for _, (unit, get) in cols))
    return "".join(line + "\n" for line in lines)


def accounted_csv(gpus: list, fields: str, fmt: str, ctx: dict) -> str:
    cols = [(ACCOUNTED_ALIASES.get(name, name), col) for name, col in
            _resolve(fields, ACCOUNTED_FIELDS, ACCOUNTED_ALIASES)]
    header, units = parse_format(fmt)
    lines = [_header(cols)] if header else []
    for gpu in gpus:
        for proc in gpu.accounted():
            lines.append(", ".join("N/A" if get is None else _cell(get(gpu, proc, ctx), unit, units)
                                   for _, (unit, get) in cols))
    return "".join(line + "\n" for line in lines)


def help_text() -> str:
    out = ['List of valid properties to query for the switch "--query-gpu":', ""]
    reverse: dict = {}
    for alias, canonical in ALIASES.items():
        reverse.setdefault(canonical, []).append(alias)
    for name in FIELDS:
        out.append(" or ".join(f'"{n}"' for n in [name] + reverse.get(name, [])))
    return "\n".join(out) + "\n"
