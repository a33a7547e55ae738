"""What a container is edited with: device nodes, mounts and createContainer hooks.

The OCI runtime spec's vocabulary, shared by the CDI specs Mokka writes and
reads (``mokka.core.cdi``), the runtime's view of a container and the NRI
adjustment (``mokka.nri.inject``). NamedTuples, not dataclasses: a request
carries dozens of them and a frozen dataclass costs ~3x more to build, on
every CreateContainer.
"""

from __future__ import annotations

from typing import NamedTuple


class Mount(NamedTuple):
    destination: str
    source: str
    type: str = "bind"
    options: tuple[str, ...] = ()


class Hook(NamedTuple):
    """An OCI createContainer hook (NRI Hook, a CDI ``createContainer`` hook): a host path
    the runtime runs in the container's mount namespace, its argv and env."""
    path: str
    args: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    timeout: int | None = None


class Device(NamedTuple):
    """A device node as the container sees it (OCI LinuxDevice, CDI DeviceNode)."""
    path: str
    type: str            # "c", "b", "u", "p"
    major: int
    minor: int
    file_mode: int | None = None
    uid: int | None = None
    gid: int | None = None
