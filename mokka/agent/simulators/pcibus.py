"""pcibus: the fake PCI sysfs trees and the libmockfs shim that points lspci and
friends at it; Apply writes the NFD feature file.

One GPU's tree, laid out as on a real host under a sysfs root: the bridges
mokka.core.pcitopo places above it (a root port, a switch's upstream and downstream
ports, each a device directory with class 0x060400 and a ``driver`` link to
``bus/pci/drivers/pcieport``), and nested in them ``devices/<root complex>/<bridges>/<bdf>``
with the attribute files and a ``driver`` link to ``bus/pci/drivers/nvidia``;
``bus/pci/devices/<bdf>`` and ``bus/pci/drivers/<driver>/<bdf>`` link back to each device
directory. The same tree is staged three times: all GPUs together under ``sys/`` (what
libmockfs shows a process) and under ``driver/sys`` (a driver root has its /sys: the GPU
Operator's validator lists it), and each GPU alone, with its bridges, under
``sysview/gpu/<minor>`` (the lowers the proc hook merges over the /sys of a container that
may see that GPU: two GPUs behind one bridge merge into one directory of it).

Each HCA of a profile with InfiniBand is a PCI function too, where mokka.core.hcapci
places it, under the switch of its GPU: the same attribute files (Mellanox's vendor id,
the device id its hca_type names, class 0x020700), a ``driver`` link to ``bus/pci/drivers/mlx5_core``, its
``infiniband/mlx5_<n>`` directory with the attributes ibstat reads and a ``device`` link
back, and the bus links; staged under ``sys/`` (lspci lists the HCAs) and each alone, with
its bridges, under ``sysview/hca/<n>`` (the lowers the hook merges when the container
selects InfiniBand).
"""

from __future__ import annotations

import os
import struct

from mokka.agent.desired import Desired
from mokka.agent.hostfs import Entry, File, Link
from mokka.agent.simulators import Host, Readiness
from mokka.agent.simulators.ib import hca_files
from mokka.core import hcapci, pcitopo
from mokka.core import infiniband as ibm
from mokka.core import names

OWNER = "pcibus"
NFD_OWNER = "pcibus:nfd"
PCI_CLASS = 0x030200              # 3D controller
RESOURCE_ROWS = 7
#: The kernel driver bound to every GPU (``bus/pci/drivers/nvidia``).
DRIVER = "nvidia"


def config_header(vendor: int, device: int, sub_vendor: int, sub_device: int,
                  pci_class: int = PCI_CLASS) -> bytes:
    """A 256-byte type-0 config space: ids, the class, revision 0, no BARs set."""
    head = struct.pack("<HHHHB3sBBBB", vendor, device, 0x0006, 0x0000, 0x00,
                       pci_class.to_bytes(3, "little"), 0, 0, 0, 0)
    head += b"\0" * 24                          # BAR0..BAR5
    head += struct.pack("<IHHIB3sIBBBB", 0, sub_vendor, sub_device, 0, 0, b"\0" * 3, 0,
                        0, 1, 0, 0)             # no capability list, int line 0, pin INTA
    return head.ljust(256, b"\0")


def _attribute_files(vendor: int, device: int, sub_vendor: int, sub_device: int, pci_class: int,
                     numa_node: int, irq: int = 0) -> dict[str, File]:
    attrs = {
        "numa_node": f"{numa_node}", "vendor": f"0x{vendor:04x}",
        "device": f"0x{device:04x}", "class": f"0x{pci_class:06x}",
        "revision": "0x00", "irq": f"{irq}",
        "subsystem_vendor": f"0x{sub_vendor:04x}",
        "subsystem_device": f"0x{sub_device:04x}",
        "resource": "\n".join(["0x0000000000000000 0x0000000000000000 0x0000000000000000"]
                              * RESOURCE_ROWS),
    }
    out = {name: File(f"{value}\n".encode(), 0o444) for name, value in attrs.items()}
    out["config"] = File(config_header(vendor, device, sub_vendor, sub_device, pci_class), 0o644)
    return out


def attributes(gpu: dict) -> dict[str, File]:
    """The attribute files of one GPU's PCI device directory, by name."""
    pci = gpu["pci"]
    return _attribute_files(pci.get("vendor_id") or 0x10DE, pci.get("pci_device", 0),
                            pci.get("subsystem_vendor", 0), pci.get("subsystem_device", 0),
                            PCI_CLASS, gpu.get("numa_node", 0), pci.get("irq", 0))


def hca_attributes(fn: hcapci.HcaFunction) -> dict[str, File]:
    """The attribute files of one HCA's PCI device directory, by name (with its modalias)."""
    out = _attribute_files(ibm.MLX_VENDOR, fn.device, ibm.MLX_VENDOR, ibm.MLX_SUBSYSTEM_DEVICE,
                           hcapci.PCI_CLASS, fn.numa_node)
    out["modalias"] = File(f"{ibm.modalias(fn.device)}\n".encode(), 0o444)
    return out


def _function_tree(sysfs: str, path: str, bdf: str, driver: str, files: dict[str, Entry]) -> dict[str, Entry]:
    """A PCI function's device directory (``devices/<path>``, ``files`` in it) and its bus links
    under the sysfs root ``sysfs``; every link relative, so the tree reads the same wherever it
    is mounted."""
    devices, pci = names.SYS_VIEW_DEVICES, os.path.join(names.SYS_VIEW_BUS, "pci")
    dev_dir = os.path.join(sysfs, devices, path)
    up = "../" * (path.count("/") + 2)              # from the directory to the sysfs root
    out: dict[str, Entry] = {os.path.join(dev_dir, name): f for name, f in files.items()}
    out[os.path.join(dev_dir, "driver")] = Link(f"{up}{pci}/drivers/{driver}")
    out[os.path.join(sysfs, pci, "devices", bdf)] = Link(f"../../../{devices}/{path}")
    out[os.path.join(sysfs, pci, "drivers", driver, bdf)] = Link(f"../../../../{devices}/{path}")
    return out


def bridge_attributes(bridge: pcitopo.Bridge) -> dict[str, File]:
    """The attribute files of one PCIe port's device directory, by name: a type-1 config
    header with its bus numbers, and the kernel's ``secondary_bus_number`` and
    ``subordinate_bus_number``."""
    out = _attribute_files(bridge.vendor, bridge.device, 0, 0, pcitopo.PCI_CLASS, bridge.numa_node)
    out["config"] = File(bridge_config_header(bridge), 0o644)
    out["secondary_bus_number"] = File(f"{bridge.secondary}\n".encode(), 0o444)
    out["subordinate_bus_number"] = File(f"{bridge.subordinate}\n".encode(), 0o444)
    return out


def bridge_config_header(bridge: pcitopo.Bridge) -> bytes:
    """A 256-byte type-1 (bridge) config space: ids, the class, header type 1, the buses."""
    head = struct.pack("<HHHHB3sBBBB", bridge.vendor, bridge.device, 0x0007, 0x0000, 0x00,
                       pcitopo.PCI_CLASS.to_bytes(3, "little"), 0, 0, 0x01, 0)
    head += b"\0" * 8                           # BAR0, BAR1
    head += bytes([bridge.primary, bridge.secondary, bridge.subordinate, 0])
    return head.ljust(256, b"\0")


def _bridges_tree(sysfs: str, place: pcitopo.Placement) -> dict[str, Entry]:
    """The device directories and bus links of the bridges above one placed function."""
    out: dict[str, Entry] = {}
    for k, bridge in enumerate(place.bridges):
        out.update(_function_tree(sysfs, place.bridge_path(k), bridge.bdf, pcitopo.DRIVER,
                                  bridge_attributes(bridge)))
    return out


def gpu_tree(sysfs: str, gpu: dict, place: pcitopo.Placement) -> dict[str, Entry]:
    """One GPU's device directory, its bridges and their bus links under the sysfs root ``sysfs``."""
    out = _bridges_tree(sysfs, place)
    out.update(_function_tree(sysfs, place.path, gpu["pci"]["bdf"], DRIVER, attributes(gpu)))
    return out


def hca_tree(sysfs: str, fn: hcapci.HcaFunction, hca: ibm.Hca, place: pcitopo.Placement) -> dict[str, Entry]:
    """One HCA's device directory, its ``infiniband/mlx5_<n>`` child (the class attributes,
    ``device`` linking back, as the kernel lays an RDMA device under its PCI function), its
    bridges and their bus links under the sysfs root ``sysfs``."""
    files: dict[str, Entry] = dict(hca_attributes(fn))
    child = os.path.join("infiniband", hca.name)
    for rel, text in hca_files(hca).items():
        files[os.path.join(child, rel)] = File(f"{text}\n".encode() if text else b"", 0o444)
    files[os.path.join(child, "device")] = Link("../../../" + fn.bdf)
    out = _bridges_tree(sysfs, place)
    out.update(_function_tree(sysfs, place.path, fn.bdf, hcapci.DRIVER, files))
    return out


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    ov = host.overlay
    out: dict[str, Entry] = {}
    placed = pcitopo.placements(desired.state)
    for gpu in desired.state["gpus"]:
        place = placed[gpu["pci"]["bdf"]]
        out.update(gpu_tree(ov.sys, gpu, place))
        out.update(gpu_tree(ov.driver_sys, gpu, place))      # a driver root has its /sys
        # Keyed by the minor: a container's /dev/nvidia<minor> says it may see that GPU.
        out.update(gpu_tree(ov.sysview_gpu(gpu["minor_number"]), gpu, place))
    hcas = ibm.hcas(desired.state.get("infiniband") or {}, desired.state.get("node_name") or "")
    for fn, hca in zip(hcapci.functions(desired.state), hcas):
        out.update(hca_tree(ov.sys, fn, hca, placed[fn.bdf]))
        out.update(hca_tree(ov.sysview_hca(fn.index), fn, hca, placed[fn.bdf]))
    shim = host.native.shim(names.FS_LIB_FILE)
    if shim is not None:
        out[os.path.join(host.overlay.preload_lib, names.FS_LIB_FILE)] = File(shim, 0o755)
    return out


class PciBus:
    name = OWNER

    def __init__(self, host: Host):
        self.host = host
        self._readiness = Readiness()
        self._nfd = host.path(names.NFD_FEATURE_FILE)

    def stage(self, desired: Desired) -> None:
        self.host.fs.converge(OWNER, tree(desired, self.host), share_inodes=True)
        self._readiness.ok()

    def apply(self, desired: Desired) -> None:
        try:
            self.host.fs.converge(NFD_OWNER, {self._nfd: File(f"{names.NFD_FEATURE_LINE}\n".encode())})
        except OSError as exc:
            # NFD only adds a label; a read-only /etc must not hold the node back.
            self.host.log.warning("cannot write the NFD feature file; continuing",
                                  file=self._nfd, reason=str(exc))

    def revoke(self) -> None:
        self.host.fs.remove_owner(NFD_OWNER)

    def discard(self) -> None:
        self.host.fs.remove_owner(OWNER)

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
