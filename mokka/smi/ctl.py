"""What ``mokka ctl set`` may change, as plain data: key -> (state path, parser, board limit).

Pure: ``parse_assignments`` turns ``KEY=VALUE`` words into a nested override
mapping (the shape of a GPU's state, as ``overrides.yaml`` holds it) or raises
CtlError naming the key, the value and what it accepts. A key's range is its
own (``temperature`` 0..200 C) and, given the GPU's board (``board_limits``
of the node's compiled state), never past what that board has: memory used
within its memory less the driver's reserve, so NVML never reports used above
total; temperature up to its shutdown temperature, power up to its maximum
limit, clocks up to its maximum clocks, as the moving readings are held
(native/nvml/engine/dynamic.c). Numbers are ASCII digits only: ``int()`` also takes
other scripts' digits, ``_`` and ``+``, which no NVML tool prints. The
command (mokka.cmd.ctl, its verbs in mokka.smi.ctl_verbs) does the reading, locking and writing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from mokka.core import names, xid


class CtlError(Exception):
    """One line for the user: the key or value and what is allowed."""


#: A number as ctl takes it: ASCII digits, a minus sign at most (so "-1" is out of range,
#: not unreadable). 20 digits hold every 64-bit value; more is out of range, unconverted
#: (int() refuses past 4300 digits with an exception of its own).
_DIGITS = re.compile(r"-?[0-9]{1,20}")
_LONG_DIGITS = re.compile(r"-?[0-9]+")


def ascii_int(text: str) -> int | None:
    """``text`` as an integer when it is ASCII digits (a leading minus allowed), else None.
    A number of more than 20 digits reads as 10**20, past every range ctl has."""
    if _DIGITS.fullmatch(text):
        return int(text)
    if _LONG_DIGITS.fullmatch(text):
        return -10**20 if text.startswith("-") else 10**20
    return None


def shown(text: str) -> str:
    """A word of the user's as an error line quotes it: one line, at most 64 characters."""
    if text.isprintable() and len(text) <= 64:
        return text
    quoted = repr(text)
    return quoted if len(quoted) <= 64 else quoted[:61] + "..."


def _int_range(lo: int, hi: int, unit: str = "", scale: int = 1):
    """An integer from lo to hi (``unit`` may follow it), times ``scale`` in the state.
    ``board``: the most the GPU's board allows, in the state's units, and what that is."""
    def parse(key: str, text: str, board: tuple[int, str] | None = None) -> int:
        top, why = hi, ""
        if board is not None and board[0] // scale < hi:
            top = max(lo, board[0] // scale)
            why = f"; {top}{' ' + unit if unit else ''} is this GPU's {board[1]}"
        raw = text.strip()
        if unit and raw.lower().endswith(unit.lower()):
            raw = raw[: -len(unit)].strip()
        value = ascii_int(raw)
        if value is None or not lo <= value <= top:
            suffix = f" (optionally with '{unit}')" if unit else ""
            raise CtlError(f"{key}={shown(text)}: expected an integer from {lo} to {top}{suffix}{why}")
        return value * scale
    parse.allowed = f"{lo}..{hi}{unit}"
    return parse


def _choice(*choices: str):
    def parse(key: str, text: str, board=None) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise CtlError(f"{key}={shown(text)}: expected one of {', '.join(choices)}")
        return value
    parse.allowed = "|".join(choices)
    return parse


def _flag():
    def parse(key: str, text: str, board=None) -> bool:
        value = text.strip().lower()
        if value not in ("true", "false"):
            raise CtlError(f"{key}={shown(text)}: expected one of true, false")
        return value == "true"
    parse.allowed = "true|false"
    return parse


@dataclass(frozen=True)
class Key:
    """A key of ``ctl set``: where its value goes in the GPU's state, how its text is
    read, and the board's limit on it: the compiled GPU's value at ``limit[0]`` less
    those at the others (state units), named ``limit_is``; none when the board lacks
    ``limit[0]``."""

    path: str
    parse: Callable
    limit: tuple = ()
    limit_is: str = ""


_MIB = 1 << 20
#: key -> Key. Units as nvidia-smi prints them; every board limit of ctl is here.
KEYS = {
    "temperature": Key("thermal.temperature_gpu_c", _int_range(0, 200, "C"),
                       ("thermal.shutdown_threshold_c",), "shutdown temperature"),
    "memory_temperature": Key("thermal.temperature_memory_c", _int_range(0, 200, "C"),
                              ("thermal.memory_max_c",), "maximum memory temperature"),
    "power": Key("power.current_draw_mw", _int_range(0, 10_000, "W", scale=1000),
                 ("power.max_limit_mw",), "maximum power limit"),
    "utilization.gpu": Key("utilization.gpu", _int_range(0, 100, "%")),
    "utilization.memory": Key("utilization.memory", _int_range(0, 100, "%")),
    "memory.used": Key("memory.used_bytes", _int_range(0, 16 << 20, "MiB", scale=_MIB),
                       ("memory.total_bytes", "memory.reserved_bytes"),
                       "memory less what the driver reserves"),
    "clocks.sm": Key("clocks.sm_current", _int_range(0, 10_000, "MHz"),
                     ("clocks.sm_max",), "maximum SM clock"),
    "clocks.graphics": Key("clocks.graphics_current", _int_range(0, 10_000, "MHz"),
                           ("clocks.graphics_max",), "maximum graphics clock"),
    "clocks.memory": Key("clocks.memory_current", _int_range(0, 20_000, "MHz"),
                         ("clocks.memory_max",), "maximum memory clock"),
    "ecc.volatile.sbe": Key("ecc.errors.volatile.single_bit.total", _int_range(0, 1 << 31)),
    "ecc.volatile.dbe": Key("ecc.errors.volatile.double_bit.total", _int_range(0, 1 << 31)),
    "ecc.aggregate.sbe": Key("ecc.errors.aggregate.single_bit.total", _int_range(0, 1 << 31)),
    "ecc.aggregate.dbe": Key("ecc.errors.aggregate.double_bit.total", _int_range(0, 1 << 31)),
    "fabric.state": Key("fabric.state", _choice(*names.FABRIC_STATE_CODES, names.FABRIC_STATE_AUTO)),
    # Every NVML query of the GPU fails with GPU_IS_LOST; nvidia-smi cannot get its handle.
    "lost": Key(names.STATE_LOST_KEY, _flag()),
    # What NVML_FI_DEV_GET_GPU_RECOVERY_ACTION reports; a GPU reset clears it (api/reset.c).
    "recovery_action": Key("failure.recovery_action", _choice(*names.GPU_RECOVERY_ACTIONS)),
}


def allowed_keys() -> str:
    return ", ".join(f"{k} ({key.parse.allowed})" for k, key in KEYS.items())


def board_rules() -> str:
    """What ``ctl set --help`` says of the board's limits."""
    return "; ".join(f"{k} at most its {key.limit_is}" for k, key in KEYS.items() if key.limit)


def limit_keys() -> set[str]:
    """The compiled GPU's keys ``board_limits`` reads."""
    return {each for key in KEYS.values() for each in key.limit}


def board_limits(companion: bytes, physical_index: int) -> dict[str, int]:
    """The compiled GPU's values ctl's limits use, from the node's state companion
    (mokka.engine.flatstate: ``gpu.<physical index>.<key> <value>`` lines): key -> value.
    A value that is not plain ASCII digits is left out, as a limit the board lacks."""
    prefix = f"{names.COMPANION_GPU_LIST}.{physical_index}.".encode()
    wanted = limit_keys()
    out: dict[str, int] = {}
    for line in companion.splitlines():
        if not line.startswith(prefix):
            continue
        key, _, value = line[len(prefix):].partition(b" ")
        name = key.decode("ascii", "replace")
        number = ascii_int(value.decode("ascii", "replace"))
        if name in wanted and number is not None and number >= 0:
            out[name] = number
    return out


def _limit(key: Key, board: dict | None) -> tuple[int, str] | None:
    """The board's limit on ``key``: none without its first value; a value it subtracts
    that the board lacks counts 0, as the library reads it (no reserve: none reserved)."""
    if not key.limit or board is None or key.limit[0] not in board:
        return None
    first, *rest = key.limit
    return max(0, board[first] - sum(board.get(k, 0) for k in rest)), key.limit_is


def parse_assignments(words: list[str], board: dict | None = None) -> dict:
    """``["temperature=80", "power=300W"]`` -> ``{"thermal": {...}, "power": {...}}``.
    ``board``: the GPU's ``board_limits``; None holds each key to its own range only."""
    if not words:
        raise CtlError(f"nothing to set: give KEY=VALUE, keys: {allowed_keys()}")
    out: dict = {}
    seen: set = set()
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise CtlError(f"{shown(word)}: expected KEY=VALUE")
        if key not in KEYS:
            raise CtlError(f"{shown(key)}: not a key ctl sets; keys: {allowed_keys()}")
        if key in seen:
            raise CtlError(f"{key}: given more than once; give each key once")
        seen.add(key)
        spec = KEYS[key]
        node = out
        *parents, leaf = spec.path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = spec.parse(key, value, _limit(spec, board))
    return out


def parse_xid_code(text: str) -> int:
    raw = text.strip()
    lo, hi = xid.CODES
    code = ascii_int(raw)
    if code is None or not lo <= code <= hi:
        raise CtlError(f"{shown(text)}: not an Xid code; expected an integer from {lo} to {hi} "
                       "(e.g. 79: fallen off the bus, 48: double bit ECC error)")
    return code


def parse_instance_target(text: str) -> tuple[str, int | None, int | None]:
    """``mokka ctl xid``'s target as (GPU, GPU instance id, compute instance id):
    ``GPU`` alone, ``GPU:GI`` (the Xid names the GPU instance, not a compute instance)
    or ``GPU:GI:CI``, GPU an index or a UUID, the ids as nvidia-smi -L prints them.
    A MIG UUID is the caller's to look up; CtlError for ids that are not MIG's."""
    gpu, *ids = text.split(":")
    if len(ids) > 2 or not gpu:
        raise CtlError(f"{shown(text)}: not a GPU or MIG device; expected GPU, GPU:GI, GPU:GI:CI "
                       "or a MIG device's UUID (nvidia-smi -L lists them)")
    bounds = (("GPU instance", names.MIG_GPU_INSTANCE_IDS), ("compute instance", names.MIG_COMPUTE_INSTANCE_IDS))
    out = []
    for word, (what, count) in zip(ids, bounds):
        value = ascii_int(word)
        if value is None or not 0 <= value < count:
            raise CtlError(f"{shown(text)}: {shown(word)} is not a {what} id; expected an integer "
                           f"from 0 to {count - 1}")
        out.append(value)
    out += [None] * (2 - len(out))
    return gpu, out[0], out[1]
