"""What the kernel (or the sandbox this machine runs in) refuses: probed before
a test relies on it, and told apart from our own failures in error texts."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import tempfile
from pathlib import Path


class KernelRefusal(RuntimeError):
    """The kernel (or the sandbox this machine runs in) refuses to run containers."""


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
MNT_DETACH = 2


def overlay_supported(scratch: str | os.PathLike) -> tuple[bool, str]:
    """Try an overlay mount in ``scratch`` the way containerd's overlayfs plugin checks."""
    base = Path(tempfile.mkdtemp(prefix="ovl-probe-", dir=scratch))
    try:
        for d in ("lower1", "lower2", "upper", "work", "merged"):
            (base / d).mkdir()
        opts = f"lowerdir={base}/lower2:{base}/lower1,upperdir={base}/upper,workdir={base}/work"
        rc = _libc.mount(b"overlay", str(base / "merged").encode(), b"overlay", 0, opts.encode())
        if rc != 0:
            err = ctypes.get_errno()
            return False, f"overlay mount failed: {os.strerror(err)} (errno {err})"
        detach(str(base / "merged"))
        return True, "ok"
    finally:
        shutil.rmtree(base, ignore_errors=True)


# Error texts from runc/containerd that mean "the kernel or sandbox refuses", not "our bug".
KERNEL_REFUSAL_PATTERNS = (
    r"unshare.*operation not permitted",
    r"clone.*operation not permitted",
    r"pivot_root.*(invalid argument|operation not permitted)",
    r"(mount|mounting).*(operation not permitted|permission denied|no such device)",
    r"cgroup.*(read-only file system|operation not permitted|mountpoint does not exist|no cgroup mount)",
    r"seccomp.*(not supported|invalid argument|function not implemented)",
    r"namespace.*(not supported|invalid argument)",
    r"function not implemented",
)


def kernel_refusal_reason(text: str) -> str | None:
    """Return the matching pattern if ``text`` is a kernel/sandbox refusal, else None."""
    for pattern in KERNEL_REFUSAL_PATTERNS:
        m = re.search(pattern, text, re.IGNORECASE | re.DOTALL)
        if m:
            return m.group(0)[:300]
    return None


def detach(target: str) -> None:
    """Lazily unmount ``target`` (MNT_DETACH); an error is left to the caller's next look."""
    _libc.umount2(target.encode(), MNT_DETACH)
