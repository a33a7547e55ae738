"""Per-node GPU identity: what makes one node's GPUs differ from another's.

A profile describes a board, so every node staged from it would report the same
GPU UUIDs, serial numbers, board ids and NVLink cluster UUID, and anything that keys
on them across a cluster (metrics series, DRA device names, a health controller's
records) would see one node. Compiled for a named node, each of them is instead a
function of (node name, the GPU's index, the profile's value): distinct across nodes,
the same on every restart of one node. Without a node name, or with
``system.identity: fixed`` (a capture that must keep its node's identities), the
profile's values stand as written.

Everything derived from these follows: the MIG devices' UUIDs (the library derives
them from the GPU's), the CUDA driver's UUIDs (it reads NVML), the CDI device names.

Pure: a function of its arguments.
"""

from __future__ import annotations

import hashlib

from mokka.core import names

#: The digits of a serial number kept as the profile writes them (the board's prefix).
SERIAL_PREFIX = 4
#: Shorter digit strings are not a board's serial number: they stand as written.
SERIAL_MIN_DIGITS = 8
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def per_node(system: dict, node_name: str) -> bool:
    """Whether the GPUs of a profile with this ``system`` block get ``node_name``'s identities."""
    mode = str(system.get("identity") or names.IDENTITY_PER_NODE).lower()
    return bool(node_name) and mode != names.IDENTITY_FIXED


def apply(gpus: list[dict], node_name: str) -> None:
    """Give each compiled GPU (``uuid``, ``serial``, ``board_id``, ``fabric`` filled in)
    ``node_name``'s identity, in place."""
    for gpu in gpus:
        index = gpu["index"]
        gpu["uuid"] = "GPU-" + _uuid_text(_hash(node_name, index, gpu["uuid"].lower()))
        serial = gpu.get("serial")
        if isinstance(serial, str) and serial.isdigit() and len(serial) >= SERIAL_MIN_DIGITS:
            gpu["serial"] = _serial(serial, _hash(node_name, index, serial))
        # Shared values stay shared: GPUs of one board keep one board id, GPUs of one
        # NVLink domain one cluster UUID.
        gpu["board_id"] = int(_hash(node_name, "board", str(gpu["board_id"]))[:8], 16) or 1
        fabric = gpu.get("fabric")
        if isinstance(fabric, dict):
            fabric["cluster_uuid"] = cluster_uuid(node_name, fabric.get("cluster_uuid"))


def cluster_uuid(node_name: str, profile_value):
    """The NVLink cluster UUID a node's GPUs report for the profile's (normalized) value:
    the node's own, or the value as it is where it names no cluster (the zero UUID)."""
    if not _is_cluster(profile_value):
        return profile_value
    return _uuid_text(_hash(node_name, "cluster", profile_value))


def _hash(node_name: str, where, value: str) -> str:
    return hashlib.sha256(f"{node_name}\0{where}\0{value}".encode()).hexdigest()


def _uuid_text(h: str) -> str:
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _serial(serial: str, h: str) -> str:
    rest = len(serial) - SERIAL_PREFIX
    return serial[:SERIAL_PREFIX] + f"{int(h, 16) % 10 ** rest:0{rest}d}"


def _is_cluster(value) -> bool:
    """A cluster UUID (normalized by compile); the zero UUID says the GPU is in none."""
    return isinstance(value, str) and len(value) == 36 and value.lower() != _ZERO_UUID
