"""nvlink: the ComputeDomain topology document, in the overlay and beside config.yaml.

The second copy serves processes that mount only the driver root (the DRA
kubelet plugin). The mock library reads neither: the agent applies the document
for this node when it compiles ``config.nvml`` (mokka.agent.desired, and
mokka/core/topology.py), and compiles again when the document changes.
No document: both go.
"""

from __future__ import annotations

import os

from mokka.agent.desired import Desired
from mokka.agent.hostfs import Entry, File
from mokka.agent.simulators import Host, Readiness
from mokka.core import names

OWNER = "nvlink"


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    if desired.topology_text is None:
        return {}
    doc = File(desired.topology_text)
    return {path: doc for path in (host.overlay.topology,
                                   os.path.join(host.overlay.driver_config, names.TOPOLOGY_FILE))}


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
