"""The PCIe bridges above each GPU and HCA, from the compiled state. Pure; stdlib only.

On HGX and DGX nodes a GPU is not on its root complex's bus: it sits behind a root port
and a PCIe switch, and the NIC that serves it sits under the same switch (``nvidia-smi
topo -m`` calls the pair PIX). The kernel shows that chain in every device's sysfs path:

    /sys/devices/pci0000:00/0000:00:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0
                 root bus   root port    switch up    switch down  the GPU

The rule (one home; the pcibus and ib simulators both place devices by it):

- every GPU has a switch of its own, under a root port of its own on its root complex's
  bus (device 01, 02, ... in GPU order, function 0): GPUs under one root complex then meet
  at its host bridge, which is what the library reports for them (PHB), and GPUs on other
  root complexes do not share a bridge at all (NODE, SYS);
- an HCA sits under the switch of the GPU it belongs to (mokka.core.hcapci's pairing), on
  a downstream port of its own; a node without GPUs gives each HCA a switch of its own;
- a switch's downstream ports are ``<down bus>:<k>.0`` for its k-th device (the GPU first,
  then its HCAs), each with the device's bus as its secondary bus;
- the switch's two buses (the upstream port's, and the downstream ports') are the nearest
  bus numbers below the GPU's that nothing else of the domain holds (no GPU, HCA, root bus
  or earlier switch), else the nearest above: GPU 1a's switch is 18:00.0 over 19:xx.0;
- a domain with fewer than two bus numbers left gives each device of a switch that finds
  none a root port of its own instead (as a GPU in a server without a switch);
- a bridge's subordinate bus is the highest bus below it; every bridge reads class
  0x060400 and the NUMA node of the devices it leads to. Where the GPUs' bus numbers leave
  no gap (h100's 1a and 1b), the ranges of neighbouring root ports overlap: the sysfs paths
  say the tree, the bus numbers cannot.

GPU and HCA bus ids stay as compiled: NVML, CDI and nvidia-smi keep agreeing with sysfs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mokka.core import hcapci

#: The PCI class of a PCI-to-PCI bridge (bridge 0x06, subclass 0x04, normal decode).
PCI_CLASS = 0x060400
#: The kernel driver bound to every PCIe port (``bus/pci/drivers/pcieport``).
DRIVER = "pcieport"
#: A Xeon root port (Intel's "Sky Lake-E PCI Express Root Port A" in pci.ids).
ROOT_PORT_ID = (0x8086, 0x2030)
#: A Broadcom PCIe switch port, upstream and downstream alike (pci.ids "PEX890xx PCIe Gen 5
#: Switch", the switch family of HGX H100 baseboards).
SWITCH_PORT_ID = (0x1000, 0xC030)
ROOT_PORT, UPSTREAM, DOWNSTREAM = "root port", "upstream port", "downstream port"
MAX_DEVICE = 31                       # a bus holds devices 00..1f
_ROOT_COMPLEX = re.compile(r"pci([0-9a-fA-F]{4}):([0-9a-fA-F]{2})")


@dataclass(frozen=True)
class Bridge:
    """One PCIe port: where it sits (``bdf``) and the bus range behind it."""
    bdf: str                  # as sysfs spells it: 0000:19:00.0
    role: str                 # ROOT_PORT, UPSTREAM or DOWNSTREAM
    vendor: int
    device: int
    primary: int              # the bus it sits on
    secondary: int            # the bus right behind it
    subordinate: int          # the highest bus behind it
    numa_node: int


@dataclass(frozen=True)
class Placement:
    """Where one PCI function (a GPU or an HCA) sits: its root complex and its bridges, the
    root port first."""
    bdf: str
    root_complex: str
    bridges: tuple[Bridge, ...]

    @property
    def path(self) -> str:
        """Its directory under sysfs ``devices/``: the root complex, each bridge, itself."""
        return "/".join([self.root_complex, *(b.bdf for b in self.bridges), self.bdf])

    def bridge_path(self, k: int) -> str:
        """The directory of its k-th bridge (0: the root port) under sysfs ``devices/``."""
        return "/".join([self.root_complex, *(b.bdf for b in self.bridges[:k + 1])])


@dataclass
class _Switch:
    domain: int
    root_complex: str
    root_bus: int
    numa_node: int
    members: list[tuple[str, int]]            # (bdf, bus), the GPU first


def _root_bus(root_complex: str) -> int:
    match = _ROOT_COMPLEX.fullmatch(root_complex)
    return int(match.group(2), 16) if match else 0


def _switches(state: dict, hcas: list[hcapci.HcaFunction]) -> list[_Switch]:
    gpus = state.get("gpus") or []
    out = [_Switch(int(g["pci"]["domain"]), str(g["root_complex"]), _root_bus(str(g["root_complex"])),
                   int(g.get("numa_node") or 0), [(g["pci"]["bdf"], int(g["pci"]["bus"]))])
           for g in gpus]
    for fn in hcas:
        bus = int(fn.bdf.split(":")[1], 16)
        if gpus:
            out[fn.index % len(gpus)].members.append((fn.bdf, bus))
        else:
            out.append(_Switch(int(fn.bdf.split(":")[0], 16), fn.root_complex, _root_bus(fn.root_complex),
                               fn.numa_node, [(fn.bdf, bus)]))
    return out


def _free_buses(near: int, taken: set[int]) -> tuple[int, int] | None:
    """Two free bus numbers, the nearest below ``near`` first, else the nearest above;
    ascending. None when the domain has fewer than two left."""
    below = [b for b in range(near - 1, hcapci.BUS_FIRST - 1, -1) if b not in taken]
    above = [b for b in range(near + 1, hcapci.BUS_LAST + 1) if b not in taken]
    pick = (below + above)[:2]
    return (min(pick), max(pick)) if len(pick) == 2 else None


def _slot(k: int, first: int) -> tuple[int, int]:
    """(device, function) of the k-th port on a bus whose ports start at device ``first``:
    function 0 of each device first, then functions 1..7 (a node has at most MAX_GPUS +
    MAX_HCAS functions to place, fewer than a bus has slots)."""
    devices = MAX_DEVICE + 1 - first
    if k < devices:
        return first + k, 0
    return first + (k - devices) // 7, 1 + (k - devices) % 7


def placements(state: dict) -> dict[str, Placement]:
    """Every GPU's and HCA's placement, by bus id as sysfs spells it."""
    hcas = hcapci.functions(state)
    switches = _switches(state, hcas)
    taken: dict[int, set[int]] = {}
    for sw in switches:
        taken.setdefault(sw.domain, set()).update({sw.root_bus, *(bus for _, bus in sw.members)})
    ports: dict[tuple[int, int], int] = {}            # root ports used on each root bus
    out: dict[str, Placement] = {}

    def root_port(sw: _Switch, secondary: int, subordinate: int) -> Bridge:
        k = ports.get((sw.domain, sw.root_bus), 0)
        ports[(sw.domain, sw.root_bus)] = k + 1
        device, function = _slot(k, 1)
        return Bridge(f"{sw.domain:04x}:{sw.root_bus:02x}:{device:02x}.{function}", ROOT_PORT, *ROOT_PORT_ID,
                      sw.root_bus, secondary, subordinate, sw.numa_node)

    for sw in switches:
        used = taken[sw.domain]
        buses = _free_buses(sw.members[0][1], used)
        if buses is None:
            # A domain whose bus numbers are all held: each device on a root port of its own,
            # as a GPU in a server without a switch.
            for bdf, bus in sw.members:
                out[bdf] = Placement(bdf, sw.root_complex, (root_port(sw, bus, bus),))
            continue
        up_bus, down_bus = buses
        used.update(buses)
        last = max(down_bus, *(bus for _, bus in sw.members))
        rp = root_port(sw, up_bus, last)
        upstream = Bridge(f"{sw.domain:04x}:{up_bus:02x}:00.0", UPSTREAM, *SWITCH_PORT_ID,
                          up_bus, down_bus, last, sw.numa_node)
        for k, (bdf, bus) in enumerate(sw.members):
            device, function = _slot(k, 0)
            downstream = Bridge(f"{sw.domain:04x}:{down_bus:02x}:{device:02x}.{function}", DOWNSTREAM,
                                *SWITCH_PORT_ID, down_bus, bus, bus, sw.numa_node)
            out[bdf] = Placement(bdf, sw.root_complex, (rp, upstream, downstream))
    return out
