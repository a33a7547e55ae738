"""``nvidia-smi topo -m``, ``nvidia-smi nvlink -s`` and ``-e``, as NVIDIA's nvidia-smi reads them.

The matrix cell of a GPU pair comes from the library's export table (the slot
NVIDIA's binary calls for it: PIX, PXB, PHB, NODE, SYS or NV<n>); the NVLink
status from the NVLink fields nvidia-smi asks for (link count, then state and
speed per link).
"""

from __future__ import annotations

import ctypes

from mokka.core import names
from mokka.engine import nvml
from mokka.smi import values as v

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")
NV_BASE = 4                 # NV<n> is level NV_BASE + n
NV_MAX = 18


def _cell(level: int) -> str:
    if level < len(LEVELS):
        return LEVELS[level]
    if level <= NV_BASE + NV_MAX:
        return f"NV{level - NV_BASE}"
    return "Unknown"


def link_level(lib: nvml.Library, a, b) -> str:
    slot = lib.export_slot(names.NVML_EXPORT_SLOT_TOPO_LINK_LEVEL, ctypes.c_char_p, ctypes.c_char_p,
                           ctypes.c_void_p)
    level = ctypes.c_uint(0)
    code = slot(a.bus_id().encode().ljust(nvml.BUS_ID_SIZE, b"\0"),
                b.bus_id().encode().ljust(nvml.BUS_ID_SIZE, b"\0"), ctypes.byref(level))
    return _cell(level.value) if code == nvml.SUCCESS else "N/A"


def matrix(lib: nvml.Library, gpus: list) -> str:
    head = "\t" + "".join(f"GPU{g.index}\t" for g in gpus) + "CPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [head]
    for a in gpus:
        cells = "".join(f"{' X ' if a is b else link_level(lib, a, b)}\t" for b in gpus)
        numa = a.numa_node()
        rows.append(f"GPU{a.index}\t{cells}{v.cpu_list(a.cpu_affinity())}\t{v.text(numa)}\t\tN/A")
    return "\n".join(rows) + "\n\n" + LEGEND


def _heading(gpu) -> str:
    """The line over each GPU's links in ``nvlink -e`` and ``nvlink -s``."""
    return f"GPU {gpu.index}: {gpu.name() or ''} (UUID: {gpu.uuid() or ''})"


def errors(gpus: list) -> str:
    """``nvidia-smi nvlink -e``: each link's replay, recovery and CRC error counts."""
    out = []
    for gpu in gpus:
        counts = gpu.nvlink_errors()
        if not counts:
            continue                  # as NVIDIA's 550 does for a GPU whose NVLink count is 0
        out.append(_heading(gpu))
        for link, row in enumerate(counts):
            out += [f"\t Link {link}: {what} Errors: {'N/A' if n is None else n}"
                    for what, n in zip(("Replay", "Recovery", "CRC"), row)] + [""]
    return "".join(line + "\n" for line in out)


def status(gpus: list) -> str:
    out = []
    for gpu in gpus:
        speeds = gpu.nvlink_speeds()
        if not speeds:
            continue                  # as NVIDIA's 550 does for a GPU whose NVLink count is 0
        out.append(_heading(gpu))
        for link, speed in enumerate(speeds):
            out.append(f"\t Link {link}: " + ("<inactive>" if speed is None else f"{speed / 1000:g} GB/s"))
    return "".join(line + "\n" for line in out)
