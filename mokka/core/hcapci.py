"""Where each mock HCA sits on the node's PCI bus, from the compiled state. Pure; stdlib only.

The rule (one home; the pcibus and ib simulators both place HCAs by it):

- HCA ``mlx5_<n>`` belongs to GPU ``n mod <GPU count>`` (in the state's GPU order): the
  HCA sits under that GPU's root complex, in its PCI domain and on its NUMA node, as a
  node's NICs sit beside the GPUs they serve;
- its bus is the first bus number after that GPU's bus (counting 0x01..0xff and wrapping
  past 0xff to 0x01) that no GPU and no earlier HCA of the domain holds; device 00,
  function 0: so H100's GPUs on 1a, 1b, 4a, ... give mlx5_0 1c, mlx5_1 1d, mlx5_2 4c;
- a node without GPUs puts its HCAs under the first root complex of ``pcie_topology``;
- the PCI device id is what the HCA's ``hca_type`` names: mlx5 prints ``hca_type`` as
  ``MT`` and the PCI device id in decimal (ConnectX-6 MT4123 = 0x101b, ConnectX-7 MT4129
  = 0x1021); an ``hca_type`` of another shape gives ConnectX-7's.

With at most names.MAX_GPUS GPUs and names.MAX_HCAS HCAs (the profile schema's bounds)
every HCA finds a bus in the domain of its GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mokka.core import infiniband as ibm

#: The PCI class of an InfiniBand controller (network controller 0x02, subclass 0x07).
PCI_CLASS = 0x020700
#: The kernel driver bound to every HCA (``bus/pci/drivers/mlx5_core``).
DRIVER = "mlx5_core"
BUS_FIRST, BUS_LAST = 0x01, 0xFF
_HCA_TYPE = re.compile(r"MT(\d{1,5})")
_ROOT_COMPLEX = re.compile(r"pci([0-9a-fA-F]{4}):([0-9a-fA-F]{2})")


@dataclass(frozen=True)
class HcaFunction:
    """One HCA's PCI function."""
    index: int
    name: str                 # mlx5_<index>
    bdf: str                  # as sysfs spells it: 0000:1c:00.0
    root_complex: str         # pci0000:00
    numa_node: int
    device: int               # the PCI device id


def pci_device(hca_type: str) -> int:
    """The PCI device id an ``hca_type`` names (``MT4129`` -> 0x1021), else ConnectX-7's."""
    match = _HCA_TYPE.fullmatch(str(hca_type or ""))
    if match and 0 < int(match.group(1)) <= 0xFFFF:
        return int(match.group(1))
    return ibm.MLX_DEVICE


def _next_bus(bus: int) -> int:
    return BUS_FIRST if bus >= BUS_LAST else max(bus + 1, BUS_FIRST)


def _anchors(state: dict) -> list[tuple[int, int, str, int]]:
    """(domain, bus, root complex, NUMA node) of each GPU; without GPUs, the first root complex."""
    out = [(int(g["pci"]["domain"]), int(g["pci"]["bus"]), str(g["root_complex"]), int(g.get("numa_node") or 0))
           for g in state.get("gpus") or []]
    if out:
        return out
    roots = (state.get("pcie_topology") or {}).get("root_complexes") or []
    root = roots[0] if roots else {"id": "pci0000:00", "numa_node": 0}
    match = _ROOT_COMPLEX.fullmatch(str(root.get("id")))
    domain, bus = (int(match.group(1), 16), int(match.group(2), 16)) if match else (0, 0)
    return [(domain, bus, f"pci{domain:04x}:{bus:02x}", int(root.get("numa_node") or 0))]


def functions(state: dict) -> list[HcaFunction]:
    """The node's HCAs' PCI functions, by index; none when the profile has no HCA."""
    ib = state.get("infiniband") or {}
    count = int(ib.get("hca_count") or 0) if ib.get("enabled") else 0
    if count <= 0:
        return []
    anchors = _anchors(state)
    taken = {(g["pci"]["domain"], g["pci"]["bus"]) for g in state.get("gpus") or []}
    device = pci_device(ib.get("hca_type"))
    out = []
    for n in range(count):
        domain, bus, root_complex, numa = anchors[n % len(anchors)]
        for _ in range(BUS_LAST):
            bus = _next_bus(bus)
            if (domain, bus) not in taken:
                break
        else:
            raise ValueError(f"no PCI bus left in domain {domain:04x} for {ibm.HCA_PREFIX}{n}")
        taken.add((domain, bus))
        out.append(HcaFunction(index=n, name=f"{ibm.HCA_PREFIX}{n}", bdf=f"{domain:04x}:{bus:02x}:00.0",
                               root_complex=root_complex, numa_node=numa, device=device))
    return out
