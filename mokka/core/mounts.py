"""mount(2), umount2(2) and unshare(2) through libc: Python 3.11 has none of them.

Every wrapper raises OSError with the kernel's errno and the path it concerns. The
node agent publishes its driver tree with them; ``mokka exec`` builds its private
mount namespace with them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

CLONE_NEWNS = 0x00020000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 0x2

_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _check(result: int, path: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    encode = (lambda s: None if s is None else os.fsencode(s))
    _check(_lib().mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags),
                        encode(data)), target)


def unmount(target: str) -> None:
    """Detach ``target`` (MNT_DETACH: a process still inside keeps nothing mounted for
    others); not mounted, or gone already, is not an error."""
    if _lib().umount2(os.fsencode(target), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):
            raise OSError(err, os.strerror(err), target)


def unshare_mounts() -> None:
    """A mount namespace of this process's own (still sharing with the host's until made
    private)."""
    _check(_lib().unshare(CLONE_NEWNS), "/")
