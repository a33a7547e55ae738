"""The one way Mokka writes files: never half-written, never a shared temp name."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading

from mokka.core import names


class _Fault:
    """The test-only fault hook (``names.ENV_FAULT_AFTER_WRITES``): read once, off unless set.

    Every write of this module and of the agent's device nodes calls ``tick`` between
    its temp file and its rename; the Nth call ends the process there with
    ``os._exit``, so a sweep over N lands a "kill" inside every step of staging.
    """

    def __init__(self, environ=os.environ):
        raw = environ.get(names.ENV_FAULT_AFTER_WRITES, "")
        self.budget = int(raw) if raw.isdigit() else 0
        self.count = 0
        self._mu = threading.Lock()

    def tick(self) -> None:
        if not self.budget:
            return
        with self._mu:
            self.count += 1
            if self.count >= self.budget:
                os._exit(names.FAULT_EXIT_STATUS)


FAULT = _Fault()


def atomic_write(path: str, data: bytes | str, mode: int = 0o644, sync: bool = True) -> bool:
    """Write ``data`` to ``path`` through a unique temp file and a rename.

    Returns False (and writes nothing) when the file already holds exactly
    ``data`` with ``mode``, so converging an unchanged tree touches nothing.

    The rename keeps every reader from a half-written file, a kill -9 included.
    ``sync`` also flushes the data to disk before the rename, so the file survives
    a power cut: what a user or the record of a teardown depends on. The staged
    tree passes ``sync=False``: the agent rewrites it from the profile at every
    start (converge compares bytes), and one flush per file made staging a node
    cost a disk round trip for each of its thousands of small files.
    """
    if isinstance(data, str):
        data = data.encode()
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and (st.st_mode & 0o7777) == mode and st.st_size == len(data):
            with open(path, "rb") as f:
                if f.read() == data:
                    return False
    except FileNotFoundError:
        pass
    directory = os.path.dirname(path) or "."
    try:
        fd, tmp = _new_temp(directory)
    except FileNotFoundError:                  # the directory first (not a mkdir per file)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = _new_temp(directory)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        FAULT.tick()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return True


def _new_temp(directory: str) -> tuple[int, str]:
    """A new empty file in ``directory``, open for writing: a dot name no reader takes for
    a real one, unique even between writers in other hosts or PID namespaces (O_EXCL)."""
    while True:
        tmp = os.path.join(directory, f".{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue


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
    FAULT.tick()
    os.replace(tmp, path)
    return True


class ReadRefused(ValueError):
    """The path is not something Mokka reads: not a regular file, or over the size limit."""


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, never more read.

    Symlinks are followed (a ConfigMap's ``..data`` links); anything but a regular
    file is refused without blocking: O_NONBLOCK makes opening a FIFO return at
    once, and fstat then says what the path is. Raises OSError or ReadRefused.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise ReadRefused(f"is {kind}, not a regular file")
        if st.st_size > limit:
            raise ReadRefused(f"is {st.st_size} bytes, over the limit of {limit} bytes")
        chunks, size = [], 0
        while size <= limit:                       # the file may grow after fstat
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ReadRefused(f"is over the limit of {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


@contextlib.contextmanager
def dir_locked(path: str):
    """Hold the exclusive lock of ``path``'s directory (flock on a directory fd).

    Serializes the read-modify-writes of the runtime files beside config.yaml
    (the overrides scope files, xid-events.yaml and their companions) between ``mokka ctl``,
    ``nvidia-smi -r`` and the agent's kernellog: no lock file to leave behind on
    the host, and it works inside a container through the writable config bind.
    """
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
