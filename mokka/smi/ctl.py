"""What ``mokka ctl set`` may change, as plain data: key -> (state path, parser).

Pure: ``parse_assignments`` turns ``KEY=VALUE`` words into a nested override
mapping (the shape of a GPU's state, as ``overrides.yaml`` holds it) or raises
CtlError naming the key and what it accepts. The command (mokka.cmd.ctl) does
the locking and writing.
"""

from __future__ import annotations

from mokka.core import names


class CtlError(Exception):
    """One line for the user: the key or value and what is allowed."""


def _int_range(lo: int, hi: int, unit: str = "", scale: int = 1):
    def parse(key: str, text: str) -> int:
        raw = text.strip()
        if unit and raw.lower().endswith(unit.lower()):
            raw = raw[: -len(unit)].strip()
        try:
            value = int(raw, 10)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            suffix = f" (optionally with '{unit}')" if unit else ""
            raise CtlError(f"{key}={text}: expected an integer from {lo} to {hi}{suffix}")
        return value * scale
    parse.allowed = f"{lo}..{hi}{unit}"
    return parse


def _choice(*choices: str):
    def parse(key: str, text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise CtlError(f"{key}={text}: expected one of {', '.join(choices)}")
        return value
    parse.allowed = "|".join(choices)
    return parse


def _flag():
    def parse(key: str, text: str) -> bool:
        value = text.strip().lower()
        if value not in ("true", "false"):
            raise CtlError(f"{key}={text}: expected one of true, false")
        return value == "true"
    parse.allowed = "true|false"
    return parse


_MIB = 1 << 20
#: key -> (dotted path in the GPU's state, parser). Units as nvidia-smi prints them.
KEYS = {
    "temperature": ("thermal.temperature_gpu_c", _int_range(0, 200, "C")),
    "memory_temperature": ("thermal.temperature_memory_c", _int_range(0, 200, "C")),
    "power": ("power.current_draw_mw", _int_range(0, 10_000, "W", scale=1000)),
    "utilization.gpu": ("utilization.gpu", _int_range(0, 100, "%")),
    "utilization.memory": ("utilization.memory", _int_range(0, 100, "%")),
    "memory.used": ("memory.used_bytes", _int_range(0, 16 << 20, "MiB", scale=_MIB)),
    "clocks.sm": ("clocks.sm_current", _int_range(0, 10_000, "MHz")),
    "clocks.graphics": ("clocks.graphics_current", _int_range(0, 10_000, "MHz")),
    "clocks.memory": ("clocks.memory_current", _int_range(0, 20_000, "MHz")),
    "ecc.volatile.sbe": ("ecc.errors.volatile.single_bit.total", _int_range(0, 1 << 31)),
    "ecc.volatile.dbe": ("ecc.errors.volatile.double_bit.total", _int_range(0, 1 << 31)),
    "ecc.aggregate.sbe": ("ecc.errors.aggregate.single_bit.total", _int_range(0, 1 << 31)),
    "ecc.aggregate.dbe": ("ecc.errors.aggregate.double_bit.total", _int_range(0, 1 << 31)),
    "fabric.state": ("fabric.state", _choice(*names.FABRIC_STATE_CODES, names.FABRIC_STATE_AUTO)),
    # Every NVML query of the GPU fails with GPU_IS_LOST; nvidia-smi cannot get its handle.
    "lost": (names.STATE_LOST_KEY, _flag()),
}


def allowed_keys() -> str:
    return ", ".join(f"{k} ({parser.allowed})" for k, (_, parser) in KEYS.items())


def parse_assignments(words: list[str]) -> dict:
    """``["temperature=80", "power=300W"]`` -> ``{"thermal": {...}, "power": {...}}``."""
    if not words:
        raise CtlError(f"nothing to set: give KEY=VALUE, keys: {allowed_keys()}")
    out: dict = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise CtlError(f"{word}: expected KEY=VALUE")
        if key not in KEYS:
            raise CtlError(f"{key}: not a key ctl sets; keys: {allowed_keys()}")
        path, parser = KEYS[key]
        node = out
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = parser(key, value)
    return out


#: Xid codes ``ctl xid`` accepts (the driver's numbering; mokka.core.xid names the common ones).
XID_CODES = (1, 999)


def parse_xid_code(text: str) -> int:
    raw = text.strip()
    lo, hi = XID_CODES
    if not raw.isdigit() or not lo <= int(raw) <= hi:
        raise CtlError(f"{text}: not an Xid code; expected an integer from {lo} to {hi} "
                       "(e.g. 79: fallen off the bus, 48: double bit ECC error)")
    return int(raw)
