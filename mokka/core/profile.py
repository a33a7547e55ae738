"""GPU profiles: the Go Mokka YAML format, loaded, merged and validated.

A profile is a built-in name (``mokka/core/profiles/<name>.yaml``) or the path
of a user's file. ``load`` returns a ``Profile`` with the raw bytes (staged
verbatim and digested), the parsed document and the per-GPU devices with
``device_defaults`` merged in by the Go reference's rules. Every problem is a
``ProfileError`` naming the file, the field path and what is wrong.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from dataclasses import dataclass
from importlib import resources

from mokka.core import names

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

ARCHITECTURES = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada_lovelace",
                 "ada", "hopper", "blackwell", "rubin")
FAILURE_MODES = ("", "healthy", "lost", "fallen_off_bus", "ecc_uncorrectable")
FABRIC_STATES = ("", *names.FABRIC_STATE_CODES, names.FABRIC_STATE_AUTO)
DEFAULT_DEVICE_COUNT = 8

_BUS_ID = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")
_UUID = re.compile(r"^GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
_VERSION = re.compile(r"^[0-9]+(?:\.[0-9]+){1,3}$")


class ProfileError(ValueError):
    """One line: ``<file>: <field.path>: <what is wrong>``."""

    def __init__(self, source: str, field: str, message: str):
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
    match = _BUS_ID.match(value) if isinstance(value, str) else None
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
        try:
            with open(profile, "rb") as f:
                return profile, f.read()
        except OSError as exc:
            raise ProfileError(profile, "", f"cannot read the profile: {exc.strerror}; "
                               "pass a readable file or a built-in name") from None
    if profile not in builtin_names():
        raise ProfileError(profile, "", "unknown profile; built-in profiles are "
                           + ", ".join(builtin_names()) + " (or pass a file path)")
    data = resources.files("mokka.core.profiles").joinpath(f"{profile}.yaml").read_bytes()
    return f"<builtin>/{profile}.yaml", data


def load(profile: str = names.DEFAULT_PROFILE) -> Profile:
    path, text = read(profile)
    return parse(text, source=profile or names.DEFAULT_PROFILE, path=path)


def parse(text: bytes, source: str = "<profile>", path: str | None = None) -> Profile:
    from mokka.core import yamlio  # only where profiles load: never on nvidia-smi's fast path

    where = path or source
    try:
        doc = yamlio.safe_load(text)
    except yamlio.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ProfileError(where, "", f"invalid YAML: {at}{problem}") from None
    devices = validate_and_merge(doc, where)
    return Profile(source=source, path=where, text=text, doc=doc, devices=tuple(devices))


# --- validation ---------------------------------------------------------------

class _Checker:
    def __init__(self, where: str):
        self.where = where

    def fail(self, field: str, message: str):
        raise ProfileError(self.where, field, message)

    def mapping(self, value, field: str, required: bool = False) -> dict:
        if value is None:
            if required:
                self.fail(field, "is required")
            return {}
        if not isinstance(value, dict):
            self.fail(field, f"must be a mapping, not {_kind(value)}")
        return value

    def integer(self, block: dict, key: str, field: str, minimum: int | None = 0,
                maximum: int | None = None) -> None:
        if key not in block or block[key] is None:
            return
        value = block[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"{field}.{key}", f"must be an integer, not {_kind(value)}")
        if minimum is not None and value < minimum:
            self.fail(f"{field}.{key}", f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            self.fail(f"{field}.{key}", f"must be at most {maximum}, got {value}")

    def string(self, block: dict, key: str, field: str) -> None:
        if key in block and block[key] is not None and not isinstance(block[key], (str, int, float)):
            self.fail(f"{field}.{key}", f"must be a string, not {_kind(block[key])}")


def _kind(value) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "empty"}.get(type(value), type(value).__name__)


def _check_device_fields(c: _Checker, dev: dict, field: str) -> None:
    """Checks shared by device_defaults and each device entry."""
    name = dev.get("name")
    if name is not None:
        c.string(dev, "name", field)
        if any(ch in str(name) for ch in "/\0\n") or str(name) in (".", ".."):
            c.fail(f"{field}.name", f"{name!r} may not contain '/', newlines or NUL "
                   "(it names files on the node)")
    arch = dev.get("architecture")
    if arch not in (None, "") and str(arch).lower() not in ARCHITECTURES:
        c.fail(f"{field}.architecture", f"unknown architecture {arch!r}; use one of "
               + ", ".join(ARCHITECTURES))
    mem = c.mapping(dev.get("memory"), f"{field}.memory")
    for key in ("total_bytes", "reserved_bytes", "free_bytes", "used_bytes", "memory_bus_width"):
        c.integer(mem, key, f"{field}.memory")
    if isinstance(mem.get("total_bytes"), int) and isinstance(mem.get("reserved_bytes"), int) \
            and mem["reserved_bytes"] > mem["total_bytes"]:
        c.fail(f"{field}.memory.reserved_bytes",
               f"{mem['reserved_bytes']} exceeds total_bytes {mem['total_bytes']}")
    power = c.mapping(dev.get("power"), f"{field}.power")
    for key in ("default_limit_mw", "enforced_limit_mw", "min_limit_mw", "max_limit_mw",
                "current_draw_mw"):
        c.integer(power, key, f"{field}.power")
    fan = c.mapping(dev.get("fan"), f"{field}.fan")
    c.integer(fan, "count", f"{field}.fan")
    pci = c.mapping(dev.get("pci"), f"{field}.pci")
    if pci.get("bus_id") is not None and parse_bus_id(pci["bus_id"]) is None:
        c.fail(f"{field}.pci.bus_id", f"{pci['bus_id']!r} is not a PCI address like "
               "00000000:07:00.0")
    for key in ("device_id", "subsystem_id"):
        if pci.get(key) is not None and _as_int(pci[key]) is None:
            c.fail(f"{field}.pci.{key}", f"{pci[key]!r} is not a number (e.g. 0x20B010DE)")
    failure = c.mapping(dev.get("failure"), f"{field}.failure")
    if str(failure.get("mode") or "").lower() not in FAILURE_MODES:
        c.fail(f"{field}.failure.mode", f"unknown mode {failure['mode']!r}; use healthy, lost, "
               "fallen_off_bus or ecc_uncorrectable")
    prob = failure.get("probability")
    if prob is not None and (isinstance(prob, bool) or not isinstance(prob, (int, float))
                             or not 0 <= prob <= 1):
        c.fail(f"{field}.failure.probability", f"must be a number in [0, 1], got {prob!r}")
    c.integer(failure, "after_calls", f"{field}.failure")
    fabric = c.mapping(dev.get("fabric"), f"{field}.fabric")
    if str(fabric.get("state") or "").lower() not in FABRIC_STATES:
        c.fail(f"{field}.fabric.state", f"unknown state {fabric['state']!r}; use "
               + ", ".join(s for s in FABRIC_STATES if s))
    c.integer(fabric, "clique_id", f"{field}.fabric", maximum=2**32 - 1)


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


def validate_and_merge(doc, where: str) -> list[dict]:
    c = _Checker(where)
    if not isinstance(doc, dict):
        c.fail("", f"the document must be a mapping, not {_kind(doc)}")
    if doc.get("version") in (None, ""):
        c.fail("version", "is required (e.g. version: \"1.0\")")
    system = c.mapping(doc.get("system"), "system", required=True)
    driver = system.get("driver_version")
    if driver in (None, ""):
        c.fail("system.driver_version", "is required (e.g. 550.163.01)")
    if not _VERSION.match(str(driver)):
        c.fail("system.driver_version", f"{driver!r} is not a version like 550.163.01")
    c.integer(system, "num_devices", "system", maximum=names.MAX_GPUS)
    defaults = c.mapping(doc.get("device_defaults"), "device_defaults")
    _check_device_fields(c, defaults, "device_defaults")
    entries = doc.get("devices") or []
    if not isinstance(entries, list):
        c.fail("devices", f"must be a list, not {_kind(entries)}")
    if len(entries) > names.MAX_GPUS:
        c.fail("devices", f"lists {len(entries)} GPUs; at most {names.MAX_GPUS} are supported")
    for key, block in (("nvlink", doc.get("nvlink")), ("infiniband", doc.get("infiniband")),
                       ("pcie_topology", doc.get("pcie_topology"))):
        c.mapping(block, key)
    nvlink = doc.get("nvlink") or {}
    c.integer(nvlink, "links_per_gpu", "nvlink", maximum=64)
    if nvlink.get("switches") is not None and not isinstance(nvlink["switches"], list):
        c.fail("nvlink.switches", f"must be a list, not {_kind(nvlink['switches'])}")
    ib = doc.get("infiniband") or {}
    c.integer(ib, "hcas_per_gpu", "infiniband", maximum=16)
    c.integer(ib, "hca_count", "infiniband", maximum=1024)
    c.integer(ib, "rate_gbps", "infiniband")
    topo = doc.get("pcie_topology") or {}
    roots = topo.get("root_complexes") or []
    if not isinstance(roots, list):
        c.fail("pcie_topology.root_complexes", f"must be a list, not {_kind(roots)}")
    for r, root in enumerate(roots):
        root = c.mapping(root, f"pcie_topology.root_complexes[{r}]")
        rid = str(root.get("id") or "")
        if not re.match(r"^pci[0-9a-fA-F]{4}:[0-9a-fA-F]{2}$", rid):
            c.fail(f"pcie_topology.root_complexes[{r}].id", f"{rid!r} is not a root complex "
                   "name like pci0000:00")
        c.integer(root, "numa_node", f"pcie_topology.root_complexes[{r}]")

    seen_index: dict[int, int] = {}
    seen_minor: dict[int, int] = {}
    seen_uuid: dict[str, int] = {}
    seen_bus: dict[str, int] = {}
    by_index: dict[int, dict] = {}
    for i, entry in enumerate(entries):
        field = f"devices[{i}]"
        entry = c.mapping(entry, field)
        if "index" not in entry:
            c.fail(f"{field}.index", "is required")
        c.integer(entry, "index", field, maximum=names.MAX_GPUS - 1)
        idx = entry["index"]
        if idx in seen_index:
            c.fail(f"{field}.index", f"duplicate index {idx} (also devices[{seen_index[idx]}])")
        seen_index[idx] = i
        c.integer(entry, "minor_number", field, maximum=254)
        minor = entry.get("minor_number", idx)
        if minor in seen_minor:
            c.fail(f"{field}.minor_number", f"duplicate minor number {minor} "
                   f"(also devices[{seen_minor[minor]}])")
        seen_minor[minor] = i
        uuid = entry.get("uuid")
        if uuid is not None:
            if not isinstance(uuid, str) or not _UUID.match(uuid):
                c.fail(f"{field}.uuid", f"{uuid!r} is not a GPU UUID like "
                       "GPU-12345678-1234-1234-1234-123456780000")
            if uuid.lower() in seen_uuid:
                c.fail(f"{field}.uuid", f"duplicate UUID (also devices[{seen_uuid[uuid.lower()]}])")
            seen_uuid[uuid.lower()] = i
        _check_device_fields(c, entry, field)
        bus = parse_bus_id((entry.get("pci") or {}).get("bus_id"))
        if bus is not None:
            if bus.sysfs in seen_bus:
                c.fail(f"{field}.pci.bus_id", f"duplicate bus id (also devices[{seen_bus[bus.sysfs]}])")
            seen_bus[bus.sysfs] = i
        by_index[idx] = entry

    count = device_count(system, entries)
    merged = []
    for idx in range(count):
        entry = by_index.get(idx)
        merged.append(merge_device(defaults, entry) if entry else
                      merge_device(defaults, {"index": idx}))
    _check_merged(c, merged, by_index, truncated=bool(system.get("num_devices")))
    return merged


def device_count(system: dict, entries: list) -> int:
    """Go rule: num_devices if > 0, else the listed devices, else 8."""
    n = system.get("num_devices") or 0
    if n > 0:
        return n
    return len(entries) if entries else DEFAULT_DEVICE_COUNT


def _check_merged(c: _Checker, merged: list[dict], by_index: dict[int, dict],
                  truncated: bool) -> None:
    # num_devices below the listed count keeps the first GPUs (the agent sets it
    # to shrink a node); without it, an index past the list is a typo.
    for idx in sorted(by_index):
        if idx >= len(merged) and not truncated:
            c.fail("devices", f"device index {idx} is outside the device count {len(merged)} "
                   "(system.num_devices)")
    for dev in merged:
        field = f"devices[index={dev['index']}]"
        mem = dev.get("memory") or {}
        if isinstance(mem.get("total_bytes"), int) and isinstance(mem.get("reserved_bytes"), int) \
                and mem["reserved_bytes"] > mem["total_bytes"]:
            c.fail(f"{field}.memory.reserved_bytes",
                   f"{mem['reserved_bytes']} exceeds total_bytes {mem['total_bytes']}")


def merge_device(defaults: dict, entry: dict) -> dict:
    """One GPU: ``device_defaults`` with a device entry merged in (Go rules)."""
    dev = copy.deepcopy(defaults)
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
            dev[key] = copy.deepcopy(entry[key])
    for key in PER_DEVICE_FIELDS:
        if key in entry:
            dev[key] = entry[key]
    # Anything else in a device entry is ignored, as the Go engine ignores it.
    return dev
