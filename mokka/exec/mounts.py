"""The system calls ``mokka exec`` makes: a private mount namespace and mounts in it.

Thin, over ``mokka.core.mounts``; every one raises OSError with the kernel's
errno and the path it concerns. Everything here
happens in the process's own mount namespace, made private first, so no mount
propagates back to the host's.
"""

from __future__ import annotations

import os
import stat

from mokka.core.mounts import (MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_RDONLY, MS_REC,
                               MS_REMOUNT, mount as _mount, unshare_mounts)

#: The per-mount flags a bind's options can ask for (mount(8)'s names).
OPTION_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}
#: statvfs's flags that are also mount(2)'s, bit for bit (ST_NOATIME, ST_NODIRATIME too).
KEPT_FLAGS = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | 1024 | 2048


def private_namespace() -> None:
    """A mount namespace of this process's own, nothing in it shared with the host's."""
    unshare_mounts()
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)


def read_only_overlay(target: str, lowers: list[int]) -> None:
    """overlayfs of the directories ``lowers`` (``open_path`` descriptors, first on top)
    on ``target``: no upper, so nothing is written. The layers are named to the kernel as
    /proc/self/fd/N, so no ':' or ',' of a real path can split overlayfs's options."""
    _mount("overlay", target, "overlay", MS_RDONLY,
           "lowerdir=" + ":".join(f"/proc/self/fd/{fd}" for fd in lowers))


def whiteouts(target: str, entries) -> None:
    """A tmpfs on ``target`` holding an overlayfs whiteout (the char device 0:0) for each
    name of ``entries``: as the top lower of an overlay, it hides those names beneath."""
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for name in entries:
        os.mknod(os.path.join(target, name), stat.S_IFCHR | 0o000, os.makedev(0, 0))


def open_path(path: str) -> int:
    """An O_PATH descriptor: it keeps a mount reachable after something covers its path."""
    return os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)


def bind_fd(fd: int, target: str, options: tuple[str, ...] = ()) -> None:
    """Bind (recursively) what ``fd`` (``open_path``) names onto ``target``, with the
    per-mount flags of ``options`` (``OPTION_FLAGS``) added to those it has."""
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, None)
    flags = 0
    for option in options:
        flags |= OPTION_FLAGS.get(option, 0)
    if flags:
        # A bind takes its flags only from a remount of it, which sets them all: the
        # ones the source has are kept.
        flags |= os.statvfs(target).f_flag & KEPT_FLAGS
        _mount(None, target, None, MS_REMOUNT | MS_BIND | flags, None)
