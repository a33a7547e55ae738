"""Publish the driver tree at /run/nvidia/driver: a bind mount where permitted, else a symlink.

The GPU Operator validator and the DRA driver look there for a driver root. A
bind mount behaves like the real thing for tools that refuse symlinks; without
CAP_SYS_ADMIN we fall back to the Go reference's symlink and say so.
"""

from __future__ import annotations

import errno
import os

from mokka.agent.hostfs import HostFS, Link
from mokka.core import mounts
from mokka.core.mounts import unmount

OWNER = "gpudriver:publish"


def is_mountpoint(path: str) -> bool:
    """Whether ``path`` is a mount point in this mount namespace (mountinfo field 5)."""
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            for line in f:
                point = line.split()[4].decode()
                point = point.encode().decode("unicode_escape") if "\\" in point else point
                if point == path:
                    return True
    except OSError:
        pass
    return False


def bind_mount(source: str, target: str) -> None:
    mounts.mount(source, target, None, mounts.MS_BIND, None)


class DriverPublisher:
    def __init__(self, fs: HostFS, source: str, target: str, log):
        self.fs, self.source, self.target, self.log = fs, source, target, log
        self._said_symlink = False

    def publish(self) -> str:
        target = self.target
        if target in self.fs.manifest.mounts() and is_mountpoint(target):
            return "bind"
        if os.path.islink(target) and os.readlink(target) == self.source:
            return "symlink"
        if not os.path.lexists(target):
            # Record the mount point (and its new parents) before making it.
            self.fs.manifest.intend(OWNER, [target], self.fs._dirs_for({target}))
            os.makedirs(target, exist_ok=True)
        if os.path.isdir(target) and not os.path.islink(target):
            self.fs.manifest.add_mount(target)
            try:
                bind_mount(self.source, target)
                self.log.info("driver tree published by bind mount", path=target, source=self.source)
                return "bind"
            except OSError as exc:
                self.fs.manifest.drop_mount(target)
                if exc.errno not in (errno.EPERM, errno.EACCES):
                    raise
                if os.listdir(target):
                    raise OSError(errno.EEXIST, "not empty and cannot bind mount over it", target)
                os.rmdir(target)
                reason = exc.strerror
        else:
            reason = "the path exists and is not a directory"
        self.fs.converge(OWNER, {target: Link(self.source)})
        if not self._said_symlink:
            self._said_symlink = True
            self.log.info("driver tree published by symlink (bind mount not permitted)",
                          path=target, source=self.source, reason=reason)
        return "symlink"

    def withdraw(self) -> None:
        for target in self.fs.manifest.mounts():
            unmount(target)
            self.fs.manifest.drop_mount(target)
        self.fs.remove_owner(OWNER)
