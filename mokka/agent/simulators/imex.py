"""imex: channel devices and the fabric-imex-mgmt capability (their /proc/devices line: kmodules).

On profiles with a fabric block (h100, gb200, gb300) or when --imex-channels
asks. The nvidia-imex binaries come only from a user archive, which this
version does not fetch: the node stays ready without them, as a real node
without the IMEX package does, and says so once.
"""

from __future__ import annotations


from mokka.agent.desired import Desired
from mokka.agent.hostfs import CharDev, Entry, File
from mokka.agent.simulators import Host, Readiness
from mokka.core import names

OWNER = "imex"
CAPABILITY = (f"DeviceFileMinor: {names.IMEX_CAPS_MGMT_MINOR}\n"
              f"DeviceFileMode: {names.DEVICE_FILE_MODE}\nDeviceFileModify: 0\n")


def channel_count(desired: Desired) -> int:
    if desired.imex_channels > 0:
        return desired.imex_channels
    has_fabric = any(g.get("fabric") for g in desired.state["gpus"])
    return names.IMEX_CHANNEL_COUNT if has_fabric else 0


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    count = channel_count(desired)
    if count == 0:
        return {}
    ov = host.overlay
    out: dict[str, Entry] = {ov.imex_channel(i): CharDev(names.IMEX_CHANNEL_MAJOR, i)
                             for i in range(count)}
    out[ov.proc_file(names.PROC_IMEX_MGMT_CAPABILITY)] = File(CAPABILITY.encode())
    return out


class Imex:
    name = OWNER

    def __init__(self, host: Host):
        self.host = host
        self._readiness = Readiness()
        self._said = False

    def stage(self, desired: Desired) -> None:
        entries = tree(desired, self.host)
        self.host.fs.converge(OWNER, entries)
        if entries and not self._said:
            self._said = True
            self.host.log.info("IMEX channels staged without nvidia-imex binaries "
                               "(no IMEX archive given); the node stays ready",
                               channels=channel_count(desired))
        self._readiness.ok()

    def discard(self) -> None:
        self.host.fs.remove_owner(OWNER)

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
