"""One GPU of a report -> its record: the profile's device fields the report says.

``FIELDS`` maps a leaf of the report to a field of the profile (its path in the
Go format, or one of Mokka's additions) through a reading of its text; the
fields that take more than one leaf (memory, temperatures, fabric, ECC, the
supported clocks) are ``derived.py``'s. A leaf reading N/A leaves its field out,
so the mock answers NOT_SUPPORTED and prints N/A for it too; a leaf holding the
text of an NVML error nvidia-smi prints (deprecated, no permission) becomes the
GPU's ``refused`` entry for that reading. Pure.
"""

from __future__ import annotations

from mokka.core import names, schema
from mokka.core.capture import derived, numbers, words

NA_TEXTS = {"N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", ""}
#: nvmlErrorString of the errors nvidia-smi prints as text, as names.REFUSALS words.
REFUSAL_TEXTS = {"Requested functionality has been deprecated": names.REFUSAL_DEPRECATED,
                 "Insufficient Permissions": names.REFUSAL_NO_PERMISSION}


number = numbers.number
milliwatts = numbers.milliwatts
hex_id = numbers.pci_id


def enabled(text: str) -> str:
    return {"enabled": "enabled", "disabled": "disabled"}[text.lower()]


def yes(text: str) -> bool:
    return {"yes": True, "no": False, "active": True, "not active": False, "true": True,
            "false": False}[text.lower()]


def same(text: str) -> str:
    return text


#: (leaf path, profile field path, reading of the text)
FIELDS = (
    ("product_name", ("name",), same),
    ("product_brand", ("brand",), words.brand),
    ("product_architecture", ("architecture",), words.architecture),
    ("display_active", ("display", "active"), enabled),
    ("persistence_mode", ("persistence_mode",), enabled),
    ("addressing_mode", ("addressing_mode",), str.lower),
    ("sparse_operation_mode", ("sparse_operation_mode",), enabled),
    ("c2c_mode", ("c2c_mode",), enabled),
    ("inforom_bbx_flush/latest_timestamp", ("inforom_bbx_flush", "timestamp_us"), words.timestamp_us),
    ("inforom_bbx_flush/latest_duration", ("inforom_bbx_flush", "duration_us"), number),
    ("mig_mode/current_mig", ("mig", "mode_current"), enabled),
    ("mig_mode/pending_mig", ("mig", "mode_pending"), enabled),
    ("accounting_mode", ("accounting", "mode"), enabled),
    ("accounting_mode_buffer_size", ("accounting", "buffer_size"), number),
    ("driver_model/current_dm", ("driver_model", "current"), str.lower),
    ("driver_model/pending_dm", ("driver_model", "pending"), str.lower),
    ("serial", ("serial",), same),
    ("uuid", ("uuid",), same),
    ("pdi", ("pdi",), same),
    ("minor_number", ("minor_number",), number),
    ("vbios_version", ("vbios_version",), same),
    ("board_id", ("board_id",), same),
    ("board_part_number", ("board_part_number",), same),
    ("gpu_part_number", ("gpu_part_number",), same),
    ("gpu_fru_part_number", ("gpu_fru_part_number",), same),
    ("platformInfo/chassis_serial_number", ("platform", "chassis_serial_number"), same),
    ("platformInfo/slot_number", ("platform", "slot_number"), number),
    ("platformInfo/tray_index", ("platform", "tray_index"), number),
    ("platformInfo/host_id", ("platform", "host_id"), number),
    ("platformInfo/peer_type", ("platform", "peer_type"), words.peer_type),
    ("platformInfo/module_id", ("platform", "module_id"), number),
    ("platformInfo/gpu_fabric_guid", ("platform", "gpu_fabric_guid"), number),
    ("inforom_version/img_version", ("inforom", "image_version"), same),
    ("inforom_version/oem_object", ("inforom", "oem_object"), same),
    ("inforom_version/ecc_object", ("inforom", "ecc_object"), same),
    ("inforom_version/pwr_object", ("inforom", "pwr_object"), same),
    ("gpu_operation_mode/current_gom", ("gpu_operation_mode", "current"), words.operation_mode),
    ("gpu_operation_mode/pending_gom", ("gpu_operation_mode", "pending"), words.operation_mode),
    ("gpu_virtualization_mode/virtualization_mode", ("virtualization", "mode"), words.virtualization),
    ("gpu_virtualization_mode/host_vgpu_mode", ("virtualization", "host_vgpu_mode"), words.host_vgpu),
    ("gsp_firmware_version", ("gsp_firmware", "version"), same),
    ("pci/pci_device_id", ("pci", "device_id"), hex_id),
    ("pci/pci_bus_id", ("pci", "bus_id"), same),
    ("pci/pci_sub_system_id", ("pci", "subsystem_id"), hex_id),
    ("pci/pci_gpu_link_info/pcie_gen/max_link_gen", ("pcie", "max_link_gen"), number),
    ("pci/pci_gpu_link_info/pcie_gen/current_link_gen", ("pcie", "current_link_gen"), number),
    ("pci/pci_gpu_link_info/pcie_gen/max_device_link_gen", ("pcie", "gpu_max_link_gen"), number),
    ("pci/pci_gpu_link_info/link_widths/max_link_width", ("pcie", "max_link_width"), number),
    ("pci/pci_gpu_link_info/link_widths/current_link_width", ("pcie", "current_link_width"), number),
    ("pci/replay_counter", ("pcie", "replay_counter"), number),
    ("pci/tx_util", ("pcie", "tx_throughput_kbps"), number),
    ("pci/rx_util", ("pcie", "rx_throughput_kbps"), number),
    ("pci/atomic_caps_inbound", ("pcie", "atomic_caps_inbound"), words.atomics),
    ("pci/atomic_caps_outbound", ("pcie", "atomic_caps_outbound"), words.atomics),
    ("performance_state", ("performance_state",), same),
    ("compute_mode", ("compute_mode",), words.compute_mode),
    ("utilization/gpu_util", ("utilization", "gpu"), number),
    ("utilization/memory_util", ("utilization", "memory"), number),
    ("utilization/encoder_util", ("utilization", "encoder"), number),
    ("utilization/decoder_util", ("utilization", "decoder"), number),
    ("utilization/jpeg_util", ("utilization", "jpeg"), number),
    ("utilization/ofa_util", ("utilization", "ofa"), number),
    ("encoder_stats/session_count", ("encoder_stats", "session_count"), number),
    ("encoder_stats/average_fps", ("encoder_stats", "average_fps"), number),
    ("encoder_stats/average_latency", ("encoder_stats", "average_latency_us"), number),
    ("fbc_stats/session_count", ("fbc_stats", "session_count"), number),
    ("fbc_stats/average_fps", ("fbc_stats", "average_fps"), number),
    ("fbc_stats/average_latency", ("fbc_stats", "average_latency_us"), number),
    ("ecc_mode/current_ecc", ("ecc", "mode_current"), enabled),
    ("ecc_mode/pending_ecc", ("ecc", "mode_pending"), enabled),
    ("ecc_errors/channel_repair_pending", ("ecc", "repair", "channel_pending"), yes),
    ("ecc_errors/tpc_repair_pending", ("ecc", "repair", "tpc_pending"), yes),
    ("ecc_errors/unrepairable_memory", ("ecc", "unrepairable_memory"), yes),
    ("remapped_rows/remapped_row_corr", ("remapped_rows", "correctable"), number),
    ("remapped_rows/remapped_row_corr_inactive", ("remapped_rows", "correctable_inactive"), number),
    ("remapped_rows/remapped_row_unc", ("remapped_rows", "uncorrectable"), number),
    ("remapped_rows/remapped_row_unc_inactive", ("remapped_rows", "uncorrectable_inactive"), number),
    ("remapped_rows/remapped_row_pending", ("remapped_rows", "pending"), yes),
    ("remapped_rows/remapped_row_failure", ("remapped_rows", "failure_occurred"), yes),
    *((f"remapped_rows/row_remapper_histogram/row_remapper_histogram_{k}",
       ("remapped_rows", "availability_histogram", k), number) for k in ("max", "high", "partial", "low", "none")),
    ("temperature/memory_temp", ("thermal", "temperature_memory_c"), number),
    ("gpu_power_readings/instant_power_draw", ("power", "current_draw_mw"), milliwatts),
    ("gpu_power_readings/current_power_limit", ("power", "enforced_limit_mw"), milliwatts),
    ("gpu_power_readings/default_power_limit", ("power", "default_limit_mw"), milliwatts),
    ("gpu_power_readings/min_power_limit", ("power", "min_limit_mw"), milliwatts),
    ("gpu_power_readings/max_power_limit", ("power", "max_limit_mw"), milliwatts),
    ("gpu_memory_power_readings/average_power_draw", ("power", "memory_average_draw_mw"), milliwatts),
    ("gpu_memory_power_readings/instant_power_draw", ("power", "memory_instant_draw_mw"), milliwatts),
    *((f"module_power_readings/{k}", ("power", "module", m), milliwatts) for k, m in (
        ("average_power_draw", "average_draw_mw"), ("instant_power_draw", "instant_draw_mw"),
        ("current_power_limit", "current_limit_mw"), ("requested_power_limit", "requested_limit_mw"),
        ("default_power_limit", "default_limit_mw"), ("min_power_limit", "min_limit_mw"),
        ("max_power_limit", "max_limit_mw"))),
    *((f"clocks/{tag}", ("clocks", f"{domain}_current"), number) for tag, domain in derived.CLOCK_DOMAINS),
    *((f"max_clocks/{tag}", ("clocks", f"{domain}_max"), number) for tag, domain in derived.CLOCK_DOMAINS),
    ("applications_clocks/graphics_clock", ("clocks", "graphics_app"), number),
    ("applications_clocks/mem_clock", ("clocks", "memory_app"), number),
    ("default_applications_clocks/graphics_clock", ("clocks", "graphics_app_default"), number),
    ("default_applications_clocks/mem_clock", ("clocks", "memory_app_default"), number),
    ("max_customer_boost_clocks/graphics_clock", ("clocks", "graphics_customer_boost"), number),
    ("clocks_event_reasons_counters/clocks_event_reasons_counters_sw_power_cap",
     ("clocks_throttle_reasons", "counters", "sw_power_cap_us"), number),
    ("clocks_event_reasons_counters/clocks_event_reasons_counters_sync_boost",
     ("clocks_throttle_reasons", "counters", "sync_boost_us"), number),
    ("clocks_event_reasons_counters/clocks_event_reasons_counters_sw_therm_slowdown",
     ("clocks_throttle_reasons", "counters", "sw_thermal_slowdown_us"), number),
    ("clocks_event_reasons_counters/clocks_event_reasons_counters_hw_therm_slowdown",
     ("clocks_throttle_reasons", "counters", "hw_thermal_slowdown_us"), number),
    ("clocks_event_reasons_counters/clocks_event_reasons_counters_hw_power_brake",
     ("clocks_throttle_reasons", "counters", "hw_power_brake_slowdown_us"), number),
    *((f"clocks_event_reasons/clocks_event_reason_{reason}", ("clocks_throttle_reasons", reason), yes)
      for reason in ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                     "hw_thermal_slowdown", "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown",
                     "display_clocks_setting")),
    ("capabilities/egm", ("capabilities", "egm"), lambda t: words.ENABLED_WORDS[t.lower()]),
)
#: Leaves whose error text refuses a reading: leaf -> the reading (schema DEVICE_FIELDS["refused"]).
REFUSABLE = {
    "applications_clocks/graphics_clock": "applications_clocks",
    "default_applications_clocks/graphics_clock": "applications_clocks",
    "gpu_power_readings/power_state": "power_state",
    "gpu_reset_status/reset_required": "reset_status",
}


#: Leaves a GPU's profile entry cannot do without: its PCI address places it.
REQUIRED = ("pci/pci_bus_id",)
#: The longest leaf text read: the longest string a profile holds (mokka.core.schema.Str).
MAX_TEXT = 256


class RecordError(ValueError):
    """A leaf the capture cannot read: ``path`` and its text (None: not printed at all),
    and why a profile cannot take its value where the text itself is readable."""

    def __init__(self, path: str, text: str | None, why: str = ""):
        if text is None:
            problem = "is missing: capture from nvidia-smi -q -x"
        else:
            shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"
            problem = f"holds {shown}: {why}" if why else f"holds {shown}, which nvidia-smi does not print there"
        super().__init__(f"<{path}> {problem}")
        self.path = path


def record(leaves: dict, supported_clocks: tuple) -> dict:
    """The device fields one GPU's leaves say, nested as the profile nests them."""
    for path in REQUIRED:
        if path not in leaves:
            raise RecordError(_outermost_missing(leaves, path), None)
    dev: dict = {}
    for path, field_path, read in FIELDS:
        text = leaves.get(path, "")
        if text in NA_TEXTS or text in REFUSAL_TEXTS:
            continue
        if len(text) > MAX_TEXT:
            raise RecordError(path, text)
        try:
            value = read(text)
        except (ValueError, KeyError, IndexError):
            raise RecordError(path, text) from None
        if value is None:                         # None: the text says nothing of the board
            continue
        spec = _SPECS[path]
        try:
            if spec is not None:
                spec.check(value, ".".join(field_path), [])
        except schema.Invalid as exc:             # readable, but past what the field holds
            raise RecordError(path, text, exc.message) from None
        put(dev, field_path, value)
    for path in REQUIRED:
        if _get(dev, _FIELD_OF[path]) is None:
            raise RecordError(path, leaves[path])
    refused = {reading: REFUSAL_TEXTS[leaves[leaf]] for leaf, reading in REFUSABLE.items()
               if leaves.get(leaf) in REFUSAL_TEXTS}
    if refused:
        dev["refused"] = refused
    try:
        derived.fill(dev, leaves, supported_clocks)
    except derived.BadLeaf as exc:
        raise RecordError(exc.path, exc.text) from None
    return dev


_FIELD_OF = {path: field_path for path, field_path, _ in FIELDS}


def _spec(field_path: tuple) -> schema.Spec | None:
    """The profile schema's spec of a device field (None: a field it does not know)."""
    spec = schema.DEVICE_ENTRY
    for key in field_path:
        spec = spec.fields.get(key) if isinstance(spec, schema.Map) else None
    return spec


#: Each leaf's field spec: a value the profile would refuse is refused naming the leaf.
_SPECS = {path: _spec(field_path) for path, field_path, _ in FIELDS}


def _outermost_missing(leaves: dict, path: str) -> str:
    """"pci" when the GPU has no <pci> at all, else "pci/pci_bus_id"."""
    parts = path.split("/")
    for n in range(1, len(parts)):
        prefix = "/".join(parts[:n])
        if not any(p.startswith(prefix + "/") for p in leaves):
            return prefix
    return path


def _get(dev: dict, field_path: tuple):
    node = dev
    for key in field_path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def put(dev: dict, path: tuple, value) -> None:
    node = dev
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
