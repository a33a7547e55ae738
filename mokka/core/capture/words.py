"""nvidia-smi's words -> the profile's: the names the mock NVML library takes for
the values it answers (native/nvml/api/device.c, board.c), read back from the words
nvidia-smi prints for them (mokka.smi.values). Pure."""

from __future__ import annotations

import re

from mokka.core import names


def _snake(text: str) -> str:
    """"Ada Lovelace" -> "ada_lovelace", "Switch Connected" -> "switch_connected"."""
    return "_".join(text.lower().replace("-", " ").split())


def brand(text: str) -> str:
    return _snake(text)


def architecture(text: str) -> str | None:
    """None for "Unknown": a driver older than the board has no name for it (550 and Blackwell)."""
    return None if text == "Unknown" else _snake(text)


def peer_type(text: str) -> str:
    return _snake(text)


def compute_mode(text: str) -> str:
    return text.lower()


OPERATION_MODES = {"All On": "all_on", "Compute": "compute", "Low Double Precision": "low_dp"}
VIRTUALIZATION_MODES = {"None": "none", "Pass-Through": "passthrough", "VGPU": "vgpu",
                        "Host VGPU": "host_vgpu", "Host VSGA": "host_vsga"}
ENABLED_WORDS = {"enabled": True, "disabled": False}


def operation_mode(text: str) -> str:
    return OPERATION_MODES[text]


def virtualization(text: str) -> str:
    return VIRTUALIZATION_MODES[text]


def host_vgpu(text: str) -> str:
    return _snake(text)


def atomics(text: str) -> list:
    """"FETCHADD_32 SWAP_32 " -> ["fetchadd_32", "swap_32"]."""
    ops = text.split()
    if any(op not in names.PCIE_ATOMIC_CAPS for op in ops):
        raise ValueError(text)
    return [op.lower() for op in ops]


#: nvidia-smi's InfoROM flush time: ASCII digits, to the millisecond.
_TIMESTAMP = re.compile(r"([0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{3}))?", re.ASCII)


def timestamp_us(text: str) -> int:
    """"2026/08/20 23:33:00.497" (nvidia-smi's local time, taken as UTC) -> microseconds
    since the epoch."""
    import calendar
    import time

    match = _TIMESTAMP.fullmatch(text)
    if not match:
        raise ValueError(text)
    whole, millis = match.groups()
    return calendar.timegm(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) * 1_000_000 + int(millis or 0) * 1000
