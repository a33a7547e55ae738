"""nvlink: the ComputeDomain topology document, in the overlay and beside config.yaml.

The second copy serves processes that mount only the driver root (the DRA
kubelet plugin); the mock library looks beside its config. Each copy has its
compiled companion (``topology.nvml``), the only form the C library reads.
No document: all four go.
"""

from __future__ import annotations

import os

from mokka.agent.desired import Desired
from mokka.agent.hostfs import Entry, File
from mokka.agent.simulators import Host, Readiness
from mokka.core import names
from mokka.engine import pair

OWNER = "nvlink"


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    if desired.topology_text is None:
        return {}
    doc, companion = File(desired.topology_text), File(desired.topology_nvml or b"")
    out = {}
    for path in (host.overlay.topology, os.path.join(host.overlay.driver_config, names.TOPOLOGY_FILE)):
        out.update(pair.entries(path, doc, companion))
    return out


class NvLink:
    name = OWNER

    def __init__(self, host: Host):
        self.host = host
        self._readiness = Readiness()

    def stage(self, desired: Desired) -> None:
        self.host.fs.converge(OWNER, tree(desired, self.host))
        self._readiness.ok()

    def discard(self) -> None:
        self.host.fs.remove_owner(OWNER)

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
