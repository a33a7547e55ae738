"""The one way Mokka writes files: never half-written, never a shared temp name."""

from __future__ import annotations

import os
import tempfile


def atomic_write(path: str, data: bytes | str, mode: int = 0o644) -> bool:
    """Write ``data`` to ``path`` through a unique temp file and a rename.

    Returns False (and writes nothing) when the file already holds exactly
    ``data`` with ``mode``, so converging an unchanged tree touches nothing.
    """
    if isinstance(data, str):
        data = data.encode()
    try:
        st = os.lstat(path)
        if (st.st_mode & 0o7777) == mode and os.path.isfile(path) and not os.path.islink(path) \
                and st.st_size == len(data):
            with open(path, "rb") as f:
                if f.read() == data:
                    return False
    except FileNotFoundError:
        pass
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return True


def atomic_symlink(target: str, path: str) -> bool:
    """Point ``path`` at ``target`` by renaming a fresh link over it."""
    try:
        if os.readlink(path) == target:
            return False
    except OSError:
        pass
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.lnk")
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, path)
    return True
