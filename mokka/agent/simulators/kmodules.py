"""kmodules: the kernel modules the node says it has loaded, as the kernel shows them.

``sysview/module/<name>/{version,refcnt,initstate,coresize,holders/}`` (the lower the proc
hook merges over a GPU container's /sys/module), ``sysview/proc-modules`` (the lines it
adds to /proc/modules) and ``sysview/proc-devices`` (the char devices those modules
register, which it adds to /proc/devices: the one home of the driver's majors there), for the modules of the compiled state's ``system.kernel_modules``
(mokka.core.kernelmodules). Its own simulator: modules are no PCI device, and a profile
change that keeps the GPUs but loads other modules touches only this tree.
"""

from __future__ import annotations

import os

from mokka.agent.desired import Desired
from mokka.agent.hostfs import Dir, Entry, File, Link
from mokka.agent.simulators import Host, Readiness, imex
from mokka.core import kernelmodules as km

OWNER = "kmodules"
#: A module whose init has finished: what /sys/module/<name>/initstate says.
LIVE = "live"
READ_ONLY = 0o444


def _file(value) -> File:
    return File(f"{value}\n".encode(), READ_ONLY)


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    system = desired.state["system"]
    modules = tuple(system["kernel_modules"])
    out: dict[str, Entry] = {}
    for name in modules:
        d = os.path.join(host.overlay.sysview_modules, name)
        out[os.path.join(d, "version")] = _file(km.version(name, system["driver_version"]))
        out[os.path.join(d, "refcnt")] = _file(km.refcnt(name, modules))
        out[os.path.join(d, "initstate")] = _file(LIVE)
        out[os.path.join(d, "coresize")] = _file(km.BY_NAME[name].coresize)
        out[os.path.join(d, "holders")] = Dir()
        for user in km.holders(name, modules):
            # As the kernel links them: holders/<user> -> ../../<user>, beside this module.
            out[os.path.join(d, "holders", user)] = Link(f"../../{user}")
    out[host.overlay.sysview_proc_modules] = File(km.proc_modules(modules).encode(), READ_ONLY)
    devices = km.proc_devices(modules, imex.channel_count(desired) > 0)
    out[host.overlay.sysview_proc_devices] = File(devices.encode(), READ_ONLY)
    # The same lines as a whole file, for the DRA driver's ALT_PROC_DEVICES_PATH.
    out[host.overlay.imex_proc_devices] = File(km.proc_devices_file(devices).encode(), READ_ONLY)
    return out


class KernelModules:
    name = OWNER

    def __init__(self, host: Host):
        self.host = host
        self._readiness = Readiness()

    def stage(self, desired: Desired) -> None:
        self.host.fs.converge(OWNER, tree(desired, self.host), share_inodes=True)
        self._readiness.ok()

    def discard(self) -> None:
        self.host.fs.remove_owner(OWNER)

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
