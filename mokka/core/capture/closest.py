"""The built-in board closest to a capture, and what a profile takes from it
because ``nvidia-smi -q`` does not show it: the NVLink peer map, the PCI tree
(root complexes, NUMA nodes, CPU affinity), InfiniBand, the compute capability
(of a board of the same architecture), the CUDA attributes and the MIG partition
table (of the same board) and, with ``--dynamic``, the moving readings. Pure but for
reading the built-in profiles.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from mokka.core import names
from mokka.core import profile as prof


@dataclass(frozen=True)
class Board:
    name: str                      # the built-in profile's name
    doc: dict                      # its document
    device: dict                   # its first GPU, merged


def closest(first: dict) -> Board:
    """The built-in whose first GPU is most like ``first`` (a record): the same name
    above all, then the same PCI device id (a T4 prints "Tesla T4" where the built-in
    says "NVIDIA T4"), the architecture and the memory size."""
    def score(board: Board) -> tuple:
        dev = board.device
        same_id = _as_int((dev.get("pci") or {}).get("device_id")) == _as_int((first.get("pci") or {}).get("device_id"))
        total = (dev.get("memory") or {}).get("total_bytes") or 0
        wanted = (first.get("memory") or {}).get("total_bytes") or 0
        return (dev.get("name") == first.get("name"), same_id, dev.get("architecture") == first.get("architecture"),
                -abs(total - wanted))
    return max(_builtins(), key=score)


def _builtins() -> list[Board]:
    out = []
    for name in names.BUILTIN_PROFILES:
        loaded = prof.load(name)
        out.append(Board(name, loaded.doc, loaded.devices[0]))
    return out


def _as_int(value) -> int | None:
    try:
        return int(value, 0) if isinstance(value, str) else value
    except ValueError:
        return None


def pcie_topology(board: Board, bus_ids: list[str]) -> dict | None:
    """The board's root complexes holding the capture's GPUs: a GPU at a bus id the
    board lists stays where the board has it; the others are spread in order."""
    block = board.doc.get("pcie_topology")
    if not block or not block.get("root_complexes"):
        return None
    wanted = [_sysfs(b) for b in bus_ids]
    roots = [dict(r, devices=[_sysfs(b) for b in r.get("devices") or [] if _sysfs(b) in wanted])
             for r in copy.deepcopy(block["root_complexes"])]
    placed = {b for r in roots for b in r["devices"]}
    for n, bus in enumerate(wanted):
        if bus not in placed:
            roots[n * len(roots) // len(wanted)]["devices"].append(bus)
    out = {k: v for k, v in block.items() if k != "root_complexes"}
    out["root_complexes"] = [r for r in roots if r["devices"]]
    return out


def _sysfs(bus_id: str) -> str:
    parsed = prof.parse_bus_id(bus_id)
    return parsed.sysfs if parsed else bus_id.lower()


def nvlink(board: Board, c2c: bool | None) -> dict | None:
    block = copy.deepcopy(board.doc.get("nvlink"))
    if block is not None and c2c is not None:
        block["c2c_enabled"] = c2c
    return block


def infiniband(board: Board) -> dict | None:
    return copy.deepcopy(board.doc.get("infiniband"))


def compute_capability(board: Board, architecture: str | None) -> dict | None:
    if architecture and board.device.get("architecture") == architecture:
        return copy.deepcopy(board.device.get("compute_capability"))
    return None


def cuda(board: Board, name: str | None) -> dict | None:
    """The CUDA attributes of the same board (-q shows none; compile derives the rest
    from the compute capability)."""
    if name and board.device.get("name") == name:
        return copy.deepcopy(board.device.get("cuda"))
    return None


def dynamic_metrics(board: Board) -> dict | None:
    return copy.deepcopy(board.device.get("dynamic_metrics"))


#: How many GPU instances a MIG board makes when the closest board makes none.
MIG_INSTANCES = 7


def mig_instances(board: Board) -> int:
    return (board.device.get("mig") or {}).get("max_gpu_instances") or MIG_INSTANCES


def mig_table(board: Board) -> dict:
    """The board's MIG partition table (its GPU instance profiles and named layouts):
    -q shows a board's MIG mode, never what it can be partitioned into."""
    mig = board.device.get("mig") or {}
    return {k: copy.deepcopy(mig[k]) for k in ("gpu_instance_profiles", "layouts") if k in mig}
