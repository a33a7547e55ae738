"""pcibus: the fake PCI sysfs tree and the libmockfs shim that points lspci and
friends at it; Apply writes the NFD feature file.

Layout as on a real host: ``sys/bus/pci/devices/<bdf>`` links to
``../../../devices/<root complex>/<bdf>``, which holds the attribute files. The same
tree again under the driver root (``driver/sys``), as a driver root has its /sys.
"""

from __future__ import annotations

import os
import struct

from mokka.agent.desired import Desired
from mokka.agent.hostfs import Entry, File, Link
from mokka.agent.simulators import Host, Readiness
from mokka.core import names

OWNER = "pcibus"
NFD_OWNER = "pcibus:nfd"
PCI_CLASS = 0x030200              # 3D controller
RESOURCE_ROWS = 7


def config_header(vendor: int, device: int, sub_vendor: int, sub_device: int) -> bytes:
    """A 256-byte type-0 config space: ids, class 0x030200, revision 0, no BARs set."""
    head = struct.pack("<HHHHB3sBBBB", vendor, device, 0x0006, 0x0000, 0x00,
                       PCI_CLASS.to_bytes(3, "little"), 0, 0, 0, 0)
    head += b"\0" * 24                          # BAR0..BAR5
    head += struct.pack("<IHHIB3sIBBBB", 0, sub_vendor, sub_device, 0, 0, b"\0" * 3, 0,
                        0, 1, 0, 0)             # no capability list, int line 0, pin INTA
    return head.ljust(256, b"\0")


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    # Under sys/ for libmockfs, and under the driver root's sys/, which the GPU Operator
    # validator lists for the /dev/char links it makes (a real driver root has /sys).
    for sysfs, gpu in ((s, g) for s in (host.overlay.sys, host.overlay.driver_sys)
                       for g in desired.state["gpus"]):
        pci, bdf, root = gpu["pci"], gpu["pci"]["bdf"], gpu["root_complex"]
        dev_dir = os.path.join(sysfs, "devices", root, bdf)
        out[os.path.join(sysfs, "bus", "pci", "devices", bdf)] = Link(f"../../../devices/{root}/{bdf}")
        vendor = pci.get("vendor_id") or 0x10DE
        attrs = {
            "numa_node": f"{gpu.get('numa_node', 0)}", "vendor": f"0x{vendor:04x}",
            "device": f"0x{pci.get('pci_device', 0):04x}", "class": f"0x{PCI_CLASS:06x}",
            "revision": "0x00", "irq": "0",
            "subsystem_vendor": f"0x{pci.get('subsystem_vendor', 0):04x}",
            "subsystem_device": f"0x{pci.get('subsystem_device', 0):04x}",
            "resource": "\n".join(["0x0000000000000000 0x0000000000000000 0x0000000000000000"]
                                  * RESOURCE_ROWS),
        }
        for name, value in attrs.items():
            out[os.path.join(dev_dir, name)] = File(f"{value}\n".encode(), 0o444)
        out[os.path.join(dev_dir, "config")] = File(
            config_header(vendor, pci.get("pci_device", 0), pci.get("subsystem_vendor", 0),
                          pci.get("subsystem_device", 0)), 0o644)
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
