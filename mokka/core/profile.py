"""GPU profiles: the Go Mokka YAML format, loaded, merged and validated.

A profile is a built-in name (``mokka/core/profiles/<name>.yaml``) or the path
of a user's file. ``load`` returns a ``Profile`` with the raw bytes (staged
verbatim and digested), the parsed document and the per-GPU devices with
``device_defaults`` merged in by the Go reference's rules. Every problem is a
``ProfileError`` naming the file, the field path and what is wrong: types, ranges
and patterns from ``mokka.core.schema``, what spans fields from here. A file is
read only if it is a regular file within ``names.MAX_DOCUMENT_BYTES``, and parsed
within the depth and alias-expansion bounds of ``mokka.core.yamlio``.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from importlib import resources

from mokka.core import names, schema

#: Blocks a device entry replaces wholesale.
REPLACED_BLOCKS = (
    "memory", "bar1_memory", "power", "thermal", "clocks", "clocks_throttle_reasons",
    "utilization", "ecc", "dynamic_metrics", "failure", "fabric", "nvlink_error", "processes",
)
#: Identity strings a non-empty device value overrides.
IDENTITY_FIELDS = ("name", "serial", "brand", "board_part_number", "vbios_version", "architecture")
#: Blocks merged field by field.
FIELD_MERGED_BLOCKS = ("pci", "platform")
#: Keys only a device entry has.
PER_DEVICE_FIELDS = ("index", "uuid", "minor_number", "grace_cpu_pair")
#: Mokka's own fields (the Go format has none of them), which differ from GPU to GPU
#: on a real node: a device entry's value wins, blocks wholesale. The Go engine
#: ignores them, and a device's pcie block with them.
MOKKA_DEVICE_FIELDS = ("board_id", "pdi", "gpu_part_number", "gpu_fru_part_number", "addressing_mode",
                       "sparse_operation_mode", "c2c_mode", "capabilities", "cc_protected_memory",
                       "inforom_bbx_flush", "refused", "pcie")

ARCHITECTURES = schema.ARCHITECTURES
FAILURE_MODES = schema.FAILURE_MODES
FABRIC_STATES = schema.FABRIC_STATES
DEFAULT_DEVICE_COUNT = 8
#: A control character in a path or value is shown escaped: an error stays one line.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]")


def printable(text: str) -> str:
    return _UNPRINTABLE.sub(lambda m: repr(m.group(0))[1:-1], str(text))


class ProfileError(ValueError):
    """One line: ``<file>: <field.path>: <what is wrong>``."""

    def __init__(self, source: str, field: str, message: str):
        source, field, message = printable(source), printable(field), printable(message)
        self.source, self.field, self.message = source, field, message
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + message)


@dataclass(frozen=True)
class BusId:
    domain: int
    bus: int
    device: int
    function: int

    @property
    def nvml(self) -> str:
        """The form nvidia-smi prints: ``00000000:07:00.0``."""
        return f"{self.domain:08X}:{self.bus:02X}:{self.device:02X}.{self.function}"

    @property
    def sysfs(self) -> str:
        """The form sysfs and lspci use: ``0000:07:00.0``."""
        return f"{self.domain:04x}:{self.bus:02x}:{self.device:02x}.{self.function}"


def parse_bus_id(value: object) -> BusId | None:
    match = schema.BUS_ID.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return None
    domain, bus, dev, fn = match.groups()
    return BusId(int(domain or "0", 16), int(bus, 16), int(dev, 16), int(fn))


@dataclass(frozen=True)
class Profile:
    source: str            # the built-in name, or the file path as given
    path: str              # where the bytes came from ("<builtin>/name.yaml" for package data)
    text: bytes            # the YAML exactly as read
    doc: dict              # the parsed document
    devices: tuple         # merged per-GPU dicts, index 0..count-1
    unknown: tuple = ()    # paths of keys the format does not know (accepted, as Go does)

    @property
    def digest(self) -> str:
        return digest(self.text)

    @property
    def count(self) -> int:
        return len(self.devices)

    @property
    def name(self) -> str:
        return self.devices[0].get("name", "") if self.devices else ""


def digest(text: bytes) -> str:
    return "sha256:" + hashlib.sha256(text).hexdigest()


def builtin_names() -> tuple[str, ...]:
    return names.BUILTIN_PROFILES


def is_path(value: str) -> bool:
    return os.sep in value or value.endswith((".yaml", ".yml")) or value.startswith(".")


def read(profile: str) -> tuple[str, bytes]:
    """(path for messages, bytes) of a built-in name or a file path."""
    if not profile:
        profile = names.DEFAULT_PROFILE
    if is_path(profile):
        return profile, read_file(profile, "profile")
    if profile not in builtin_names():
        raise ProfileError(profile, "", "unknown profile; built-in profiles are "
                           + ", ".join(builtin_names()) + " (or pass a file path)")
    data = resources.files("mokka.core.profiles").joinpath(f"{profile}.yaml").read_bytes()
    return f"<builtin>/{profile}.yaml", data


def read_file(path: str, what: str = "profile") -> bytes:
    """A document's bytes: a regular file (symlinks followed) of at most the size limit."""
    from mokka.core.fsutil import ReadRefused, read_bounded

    limit = names.MAX_DOCUMENT_BYTES
    the = f" the {what}" if what else ""
    try:
        return read_bounded(path, limit)
    except OSError as exc:
        raise ProfileError(path, "", f"cannot read{the}: {exc.strerror or exc}; pass a "
                           "readable file" + (" or a built-in name" if what == "profile" else ""))
    except ReadRefused as exc:
        raise ProfileError(path, "", f"cannot read{the}: it {exc}; pass a regular file "
                           f"of at most {limit // (1024 * 1024)} MiB")


def load(profile: str = names.DEFAULT_PROFILE) -> Profile:
    path, text = read(profile)
    return parse(text, source=profile or names.DEFAULT_PROFILE, path=path)


def parse(text: bytes, source: str = "<profile>", path: str | None = None) -> Profile:
    from mokka.core import yamlio  # only where profiles load: never on nvidia-smi's fast path

    where = path or source
    try:
        doc = yamlio.load_profile(text)
    except yamlio.YAMLError as exc:
        raise ProfileError(where, "", yaml_problem(exc)) from None
    except (ValueError, OverflowError) as exc:   # e.g. an integer too long to convert
        raise ProfileError(where, "", f"invalid YAML: {exc}") from None
    devices, unknown = _validate(doc, where)
    return Profile(source=source, path=where, text=text, doc=doc, devices=tuple(devices),
                   unknown=tuple(unknown))


def yaml_problem(exc) -> str:
    """One line for a YAMLError: where, and what is wrong."""
    mark = getattr(exc, "problem_mark", None)
    at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    return f"invalid YAML: {at}{problem}"


# --- validation ---------------------------------------------------------------
# Types, ranges and patterns of every field: mokka.core.schema. What spans fields: here.

def _fail(where: str, field: str, message: str):
    raise ProfileError(where, field, message)


def _as_int(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return None
    return None


def _validate(doc, where: str) -> tuple[list[dict], list[str]]:
    """(merged devices, paths of unknown keys), or a ProfileError."""
    try:
        unknown = schema.check(doc)
    except schema.Invalid as exc:
        _fail(where, exc.field, exc.message)
    system = doc["system"]
    defaults = doc.get("device_defaults") or {}
    _check_memory(where, defaults, "device_defaults")
    _check_mig(where, defaults, "device_defaults")
    entries = doc.get("devices") or []

    seen_index: dict[int, int] = {}
    seen_minor: dict[int, int] = {}
    seen_uuid: dict[str, int] = {}
    seen_bus: dict[str, int] = {}
    by_index: dict[int, dict] = {}
    for i, entry in enumerate(entries):
        field = f"devices[{i}]"
        idx = entry["index"]
        if idx in seen_index:
            _fail(where, f"{field}.index", f"duplicate index {idx} (also devices[{seen_index[idx]}])")
        seen_index[idx] = i
        minor = entry.get("minor_number", idx)
        if minor in seen_minor:
            _fail(where, f"{field}.minor_number", f"duplicate minor number {minor} "
                  f"(also devices[{seen_minor[minor]}])")
        seen_minor[minor] = i
        uuid = entry.get("uuid")
        if uuid:
            if uuid.lower() in seen_uuid:
                _fail(where, f"{field}.uuid", f"duplicate UUID (also devices[{seen_uuid[uuid.lower()]}])")
            seen_uuid[uuid.lower()] = i
        _check_memory(where, entry, field)
        bus = parse_bus_id((entry.get("pci") or {}).get("bus_id"))
        if bus is not None:
            if bus.sysfs in seen_bus:
                _fail(where, f"{field}.pci.bus_id", f"duplicate bus id (also devices[{seen_bus[bus.sysfs]}])")
            seen_bus[bus.sysfs] = i
        by_index[idx] = entry

    count = device_count(system, entries)
    _check_size(where, doc, defaults, count)
    _check_hca_count(where, doc.get("infiniband") or {}, count)
    merged = []
    for idx in range(count):
        entry = by_index.get(idx)
        merged.append(merge_device(defaults, entry) if entry else
                      merge_device(defaults, {"index": idx}))
    _check_merged(where, merged, by_index, truncated=bool(system.get("num_devices")))
    _check_printed(where, merged, by_index, unknown)
    return merged, unknown


def _check_memory(where: str, dev: dict, field: str) -> None:
    mem = dev.get("memory") or {}
    if isinstance(mem.get("total_bytes"), int) and isinstance(mem.get("reserved_bytes"), int) \
            and mem["reserved_bytes"] > mem["total_bytes"]:
        _fail(where, f"{field}.memory.reserved_bytes",
              f"{mem['reserved_bytes']} exceeds total_bytes {mem['total_bytes']}")


def _check_hca_count(where: str, ib: dict, gpus: int) -> None:
    """hcas_per_gpu HCAs for each GPU may not add up past names.MAX_HCAS (hca_count's own
    bound): each HCA needs a bus beside the GPUs (mokka.core.hcapci)."""
    if not ib.get("enabled") or ib.get("hca_count"):
        return
    per_gpu = ib.get("hcas_per_gpu") or 1
    if per_gpu * gpus > names.MAX_HCAS:
        _fail(where, "infiniband.hcas_per_gpu", f"{per_gpu} for each of {gpus} GPUs is {per_gpu * gpus} "
              f"HCAs; a node has at most {names.MAX_HCAS} (lower it, or set hca_count)")


def _check_size(where: str, doc: dict, defaults: dict, count: int) -> None:
    """device_defaults is copied into every GPU: bound what compiling will build."""
    size = schema.count_nodes(doc) + count * schema.count_nodes(defaults)
    if size > names.MAX_STATE_NODES:
        _fail(where, "device_defaults", f"copied into {count} GPUs it makes {size} nodes; at most "
              f"{names.MAX_STATE_NODES} (make device_defaults smaller or list fewer GPUs)")


def _check_mig(where: str, dev: dict, field: str) -> None:
    """A board's partition table is one: ids, indices and names unique, placements
    within the board's memory slices (a compute instance's within its GPU instance),
    every layout's GPU instances known and fitting, the chosen layout one of them."""
    from mokka.core import mig as migrules

    block = dev.get("mig") or {}
    field = f"{field}.mig"
    profiles = block.get("gpu_instance_profiles") or []
    _unique(where, f"{field}.gpu_instance_profiles", profiles, ("index", "id", "name"))
    for n, gi in enumerate(profiles):
        at = f"{field}.gpu_instance_profiles[{n}]"
        _check_slots(where, at, gi, gi.get("placement_size"), MIG_MEMORY_SLICES, "the board's memory slices")
        cis = gi.get("compute_instance_profiles") or []
        _unique(where, f"{at}.compute_instance_profiles", cis, ("index", "id", "name"))
        for k, ci in enumerate(cis):
            ci_at = f"{at}.compute_instance_profiles[{k}]"
            if ci["slices"] > gi["slices"]:
                _fail(where, f"{ci_at}.slices", f"{ci['slices']} is more than its GPU instance's "
                      f"{gi['slices']}")
            _check_slots(where, ci_at, ci, ci["slices"], gi["slices"], "its GPU instance's slices")
    layouts = block.get("layouts") or []
    _unique(where, f"{field}.layouts", layouts, ("name",))
    for n, layout in enumerate(layouts):
        try:
            migrules.plan_layout(profiles, layout.get("gpu_instances") or [])
        except migrules.LayoutError as exc:
            _fail(where, f"{field}.layouts[{n}].gpu_instances", str(exc))
    chosen = block.get("layout")
    if chosen and chosen not in {layout["name"] for layout in layouts}:
        known = ", ".join(layout["name"] for layout in layouts) or "none"
        _fail(where, f"{field}.layout", f"{chosen!r} is not one of mig.layouts (this board has: {known})")


#: The memory slices a MIG board's placements are counted in (nvidia-smi mig -lgipp).
MIG_MEMORY_SLICES = 8


def _unique(where: str, field: str, items: list, keys: tuple[str, ...]) -> None:
    for key in keys:
        seen: dict = {}
        for n, item in enumerate(items):
            value = item.get(key)
            if value is None:
                continue
            if value in seen:
                _fail(where, f"{field}[{n}].{key}", f"duplicate {key} {value!r} (also [{seen[value]}])")
            seen[value] = n


def _check_slots(where: str, field: str, item: dict, size, total: int, what: str) -> None:
    starts = item.get("placements") or []
    if starts and size is None:
        _fail(where, f"{field}.placement_size", "is required with placements (in memory slices)")
    for n, start in enumerate(starts):
        if start + size > total:
            _fail(where, f"{field}.placements[{n}]", f"{start}+{size} runs past {what} ({total})")


def device_count(system: dict, entries: list) -> int:
    """Go rule: num_devices if > 0, else the listed devices, else 8."""
    n = system.get("num_devices") or 0
    if n > 0:
        return n
    return len(entries) if entries else DEFAULT_DEVICE_COUNT


def _check_merged(where: str, merged: list[dict], by_index: dict[int, dict],
                  truncated: bool) -> None:
    # num_devices below the listed count keeps the first GPUs (the agent sets it
    # to shrink a node); without it, an index past the list is a typo.
    for idx in sorted(by_index):
        if idx >= len(merged) and not truncated:
            _fail(where, "devices", f"device index {idx} is outside the device count {len(merged)} "
                   "(system.num_devices)")
    for dev in merged:
        _check_memory(where, dev, f"devices[index={dev['index']}]")


#: What nvidia-smi prints for every GPU, and what the merge leaves each GPU without when
#: the profile gives it neither in device_defaults nor in the GPU's entry of devices. A
#: GPU lacking one would stage blank, so the profile is refused. The third printed field,
#: the UUID, is never missing: compile derives one for a GPU whose entry has none.
PRINTED_FIELDS = ("name", "memory.total_bytes")


def _check_printed(where: str, merged: list[dict], by_index: dict[int, dict],
                   unknown: list[str]) -> None:
    for key in PRINTED_FIELDS:
        lacking = [d["index"] for d in merged if _blank(_dig(d, key))]
        if not lacking:
            continue
        typos = [(u, near) for u in unknown if (near := _meant(u))
                 and (key == near[1] or key.startswith(near[1] + "."))]
        if typos:                       # a near-miss key explains the gap: name the key meant
            typo, (known, _) = typos[0]
            field = f"device_defaults.{key}" if len(lacking) == len(merged) else \
                f"devices[index={lacking[0]}].{key}"
            _fail(where, field, f"{typo} is not a profile key: did you mean {known}? As written "
                  f"{len(lacking)} of {len(merged)} GPUs have no {key}, which nvidia-smi prints; "
                  f"set {key} in device_defaults or in each entry of devices")
        first = lacking[0]
        _fail(where, f"devices[index={first}].{key}",
              f"GPU {first} has no {key}{_and_others(lacking, merged)}, which nvidia-smi prints; "
              + _fix(key, by_index.get(first)))


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _and_others(lacking: list[int], merged: list[dict]) -> str:
    return "" if len(lacking) == 1 else f" ({len(lacking)} of {len(merged)} GPUs have none)"


def _fix(key: str, entry: dict | None) -> str:
    """Where to set a printed field for the first GPU lacking it. A device entry's block
    replaces device_defaults' wholesale, so a GPU whose entry has its own block must get
    the field there."""
    block = key.split(".")[0]
    if "." in key and entry is not None and entry.get(block) is not None:
        return (f"set {key} in its entry of devices (its {block} block replaces "
                f"device_defaults.{block})")
    return f"set device_defaults.{key}, or {key} in each entry of devices"


def _meant(path: str) -> tuple[str, str] | None:
    """(nearest known key, the GPU field it makes) for an unknown key in device_defaults or
    a devices entry: ("total_bytes", "memory.total_bytes") for "devices[1].memory.totl_bytes"."""
    parts = re.sub(r"\[\d+\]", "", path).split(".")
    near = schema.nearest_key(path)
    if near is None or parts[0] not in ("device_defaults", "devices") or len(parts) < 2:
        return None
    return near, ".".join(parts[1:-1] + [near])


def _dig(dev: dict, dotted: str):
    for part in dotted.split("."):
        dev = dev.get(part) if isinstance(dev, dict) else None
    return dev


def copy_tree(value):
    """A copy of a document's tree of mappings and lists; its scalars (strings, numbers,
    dates) are immutable and shared. copy.deepcopy's result for the plain data YAML
    gives, at a fraction of its cost (no memo): a 64-GPU node copies its device 128
    times on every profile change."""
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


def merge_device(defaults: dict, entry: dict) -> dict:
    """One GPU: ``device_defaults`` with a device entry merged in (Go rules)."""
    dev = copy_tree(defaults)
    for key in IDENTITY_FIELDS:
        if entry.get(key) not in (None, ""):
            dev[key] = entry[key]
    for key in FIELD_MERGED_BLOCKS:
        if isinstance(entry.get(key), dict):
            block = dict(dev.get(key) or {})
            block.update(entry[key])
            dev[key] = block
    for key in REPLACED_BLOCKS:
        if key in entry and entry[key] is not None:
            dev[key] = copy_tree(entry[key])
    for key in PER_DEVICE_FIELDS + MOKKA_DEVICE_FIELDS:
        if key in entry and entry[key] is not None:
            dev[key] = copy_tree(entry[key])
    # Anything else in a device entry is ignored, as the Go engine ignores it.
    return dev
