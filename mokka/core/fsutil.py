"""The one way Mokka writes files: never half-written, never a shared temp name."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time

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


def atomic_write(path: str, data: bytes | str, mode: int = 0o644, sync: bool = True,
                 dir_fd: int | None = None, replace_dir: bool = False) -> bool:
    """Write ``data`` to ``path`` through a unique temp file and a rename.

    Returns False (and writes nothing) when the file already holds exactly
    ``data`` with ``mode``, so converging an unchanged tree touches nothing.

    The rename keeps every reader from a half-written file, a kill -9 included.
    ``sync`` also flushes the data to disk before the rename, so the file survives
    a power cut: what a user or the record of a teardown depends on. The staged
    tree passes ``sync=False``: the agent rewrites it from the profile at every
    start (converge compares bytes), and one flush per file made staging a node
    cost a disk round trip for each of its thousands of small files.

    Whatever was at ``path`` is replaced, never opened through or written into: a
    link, a FIFO or a device gives way to the new file, whose mode is ``mode`` and
    nothing else. A directory there is removed first with ``replace_dir`` (a place a
    workload can write, where the name is Mokka's), else IsADirectoryError names ``path``. With
    ``dir_fd``, ``path`` is a name in that directory, which no rename of a
    directory above it can redirect.
    """
    if isinstance(data, str):
        data = data.encode()
    if _holds(path, data, mode, dir_fd):
        return False
    directory = "." if dir_fd is not None else (os.path.dirname(path) or ".")
    try:
        fd, tmp = _new_temp(directory, dir_fd)
    except FileNotFoundError:                  # the directory first (not a mkdir per file)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = _new_temp(directory, dir_fd)
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
        try:
            os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except IsADirectoryError:
            if not replace_dir:
                raise IsADirectoryError(errno.EISDIR, "a directory is where the file belongs", path) from None
            remove_at(dir_fd, path) if dir_fd is not None else remove_path(path)
            os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    return True


def _holds(path: str, data: bytes, mode: int, dir_fd: int | None = None) -> bool:
    """Whether ``path`` is a regular file holding exactly ``data`` with ``mode``."""
    try:
        held, st = _read_regular(path, len(data), False, dir_fd)
        return (st.st_mode & 0o7777) == mode and held == data
    except (OSError, ReadRefused):           # swapped for a link, a FIFO...: written anew
        return False


def atomic_link(source: str, path: str, data: bytes, mode: int, sync: bool = True) -> bool:
    """Make ``path`` another name of ``source``, a file that holds ``data`` with ``mode``.

    Returns False when ``path`` already holds exactly that. A new name costs the disk
    a directory entry, where a new file costs it an inode as well. Only for files
    nobody writes in place: a write through one name shows through all of them. Where
    the file system will not link (another mount, its link limit), ``path`` gets a file
    of its own, as ``atomic_write(path, data, mode, sync)`` writes it.
    """
    if _holds(path, data, mode):
        return False
    tmp = os.path.join(os.path.dirname(path) or ".", _temp_name())
    try:
        os.link(source, tmp, follow_symlinks=False)
    except OSError:
        return atomic_write(path, data, mode, sync=sync)
    try:
        FAULT.tick()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


def _temp_name(suffix: str = ".tmp") -> str:
    """A dot name no reader takes for a real one, with the suffix a cleanup looks for."""
    return f".{os.urandom(6).hex()}{suffix}"


def _new_temp(directory: str, dir_fd: int | None = None) -> tuple[int, str]:
    """A new empty file in ``directory``, open for writing: a dot name no reader takes for
    a real one, unique even between writers in other hosts or PID namespaces (O_EXCL)."""
    while True:
        name = _temp_name()
        tmp = name if dir_fd is not None else os.path.join(directory, name)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600,
                           dir_fd=dir_fd), tmp
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


#: How Mokka opens a directory a workload may have replaced: never through a link.
DIR_NOFOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

#: Directories ``remove_at`` holds open at once: a deeper tree is flattened as it goes.
_REMOVE_OPEN_DIRS = 32
#: Entries ``remove_at`` removes from one tree before it gives up on a tree that keeps growing.
_REMOVE_BUDGET = 1 << 22


def remove_at(dir_fd: int, name: str) -> bool:
    """Remove ``name`` in the directory ``dir_fd``, whatever it is, never following a link.
    True if something was there.

    A directory is emptied through descriptors opened without following, as shutil.rmtree
    does, but without recursion: at most ``_REMOVE_OPEN_DIRS`` directories are open at
    once, and a subdirectory below that depth is renamed up into the directory being
    removed, to be emptied from there. So a tree any depth deep (a workload's 1,100
    nested directories) goes, with no recursion limit and no path length reached. Works
    on any Python 3 a container brings."""
    try:
        os.unlink(name, dir_fd=dir_fd)
        return True
    except FileNotFoundError:
        return False
    except (IsADirectoryError, PermissionError):   # EISDIR, or EPERM on some file systems
        pass
    top = os.open(name, DIR_NOFOLLOW, dir_fd=dir_fd)
    stack: list[tuple[int, str]] = [(top, name)]       # (an open directory, its name in the one above)
    budget = _REMOVE_BUDGET
    try:
        while stack:
            fd = stack[-1][0]
            child = None
            with os.scandir(fd) as listing:
                for entry in listing:
                    budget -= 1
                    if budget < 0:
                        raise OSError(errno.EMLINK, "still growing after "
                                      f"{_REMOVE_BUDGET} entries were removed", name)
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                        continue
                    except FileNotFoundError:
                        continue
                    except (IsADirectoryError, PermissionError):
                        pass
                    if len(stack) >= _REMOVE_OPEN_DIRS:
                        os.rename(entry.name, _temp_name(".rm"), src_dir_fd=fd, dst_dir_fd=top)
                        continue
                    child = entry.name
                    break
            if child is not None:
                stack.append((os.open(child, DIR_NOFOLLOW, dir_fd=fd), child))
                continue
            done, done_name = stack.pop()
            os.close(done)
            with contextlib.suppress(FileNotFoundError):           # another remover got there first
                os.rmdir(done_name, dir_fd=stack[-1][0] if stack else dir_fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return True


def remove_path(path: str) -> bool:
    """``remove_at`` for a path whose directory is Mokka's own: the last component is never
    followed, whatever a workload put there. True if something was there."""
    try:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        return remove_at(fd, os.path.basename(path))
    finally:
        os.close(fd)


def own_dir_at(dir_fd: int, name: str, mode: int) -> None:
    """Make ``name`` in ``dir_fd`` a directory of this process's user with ``mode``, changed
    through a descriptor opened without following. Whatever else is there (a link, a file,
    a FIFO, another user's directory) is removed first, never followed or chmod-ed."""
    for _ in range(3):                              # a racer may put something back between
        try:
            fd = os.open(name, DIR_NOFOLLOW, dir_fd=dir_fd)
        except FileNotFoundError:
            fd = -1
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            remove_at(dir_fd, name)
            continue
        if fd >= 0:
            try:
                if os.fstat(fd).st_uid == os.geteuid():
                    os.fchmod(fd, mode)
                    return
            finally:
                os.close(fd)
            remove_at(dir_fd, name)
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "kept being replaced while it was made", name)


class ReadRefused(ValueError):
    """The path is not something Mokka reads: not a regular file, or over the size limit."""


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_bounded(path: str, limit: int, follow: bool = True, dir_fd: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, never more read.

    ``follow``: symlinks are followed (a ConfigMap's ``..data`` links). A file a
    workload can write (anything in driver/config) is read with ``follow=False``:
    a link there is refused, never read through. Anything but a regular file is
    refused without being opened (``_open_regular``). Raises OSError or ReadRefused.
    """
    return _read_regular(path, limit, follow, dir_fd)[0]


def _read_regular(path: str, limit: int, follow: bool, dir_fd: int | None) -> tuple[bytes, os.stat_result]:
    fd, st = _open_regular(path, limit, follow, dir_fd)
    try:
        chunks, size = [], 0
        while size <= limit:                       # the file may grow after fstat
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ReadRefused(f"is over the limit of {limit} bytes")
        return b"".join(chunks), st
    finally:
        os.close(fd)


def _open_regular(path: str, limit: int, follow: bool, dir_fd: int | None) -> tuple[int, os.stat_result]:
    """A descriptor to read the regular file at ``path``, and its stat.

    What is at the path is looked at through an O_PATH descriptor, which opens
    nothing, and only a regular file is then opened, through that descriptor's
    /proc/self/fd link, so the file opened is the one looked at. A device node a
    workload made where Mokka keeps a file (a container's default capabilities
    allow mknod) is never opened by root on the host: opening some devices acts
    (a watchdog arms), and a FIFO would block."""
    try:
        look = os.open(path, os.O_PATH | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise ReadRefused("is a symbolic link, not a regular file") from None
        raise
    try:
        st = os.fstat(look)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise ReadRefused(f"is {kind}, not a regular file")
        if st.st_size > limit:
            raise ReadRefused(f"is {st.st_size} bytes, over the limit of {limit} bytes")
        try:
            return os.open(f"/proc/self/fd/{look}", os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY), st
        except FileNotFoundError:                  # no /proc: open the name, then compare
            pass
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | os.O_NOFOLLOW,
                     dir_fd=dir_fd)
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            raise ReadRefused("was replaced while it was opened")
        return fd, st
    finally:
        os.close(look)


class LockHeld(Exception):
    """Another process held a directory's lock past the wait: names it and the holder."""

    def __init__(self, directory: str, pid: str, waited: float):
        self.directory, self.pid = directory, pid
        who = f"pid {pid}" if pid else "a process this one cannot see (another pid namespace)"
        super().__init__(f"{directory} is locked by {who}, held for over {waited:g} s: "
                         "end that process or wait for it, then run this again")


#: How long ``mokka ctl`` waits for the config directory's lock: every legitimate
#: holder (ctl, the agent) holds it for one read-modify-write of a few KiB.
LOCK_WAIT_S = 5.0
_LOCK_POLL_S = 0.02
#: How often a waiter looks at who holds the lock, and how many holders' turns it waits.
_HOLDER_LOOK_S = 0.2
_LOCK_TURNS = 6


def holder_pid(fd: int) -> str:
    """The pid holding a flock on ``fd``'s file, from /proc/locks ("" if not visible)."""
    st = os.fstat(fd)
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == want:
                    return "" if fields[4] in ("0", "-1") else fields[4]
    except OSError:
        pass
    return ""


def flock_within(fd: int, timeout: float, clock=time.monotonic, holder=holder_pid) -> bool:
    """Take an exclusive flock on ``fd`` within ``timeout`` seconds of one holder (flock has
    no timeout of its own: a non-blocking try, polled); False when it stayed held.

    A queue of writers (twenty ``ctl set`` at once) hands the lock on: each new holder
    starts the wait again, up to ``_LOCK_TURNS`` times ``timeout`` in all, while one
    process that keeps it (a workload) is given up on after ``timeout``."""
    start = clock()
    deadline, last_cap = start + max(timeout, 0.0), start + max(timeout, 0.0) * _LOCK_TURNS
    seen, next_look = "", start
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            now = clock()
            if now >= next_look:
                who = holder(fd)
                if who and seen and who != seen:
                    deadline = min(now + max(timeout, 0.0), last_cap)
                seen = who or seen
                next_look = now + _HOLDER_LOOK_S
            if now >= deadline:
                return False
            time.sleep(_LOCK_POLL_S)


def _open_dir(path: str) -> tuple[int, str]:
    """(an fd on ``path``'s directory, never through a link, its path)."""
    directory = os.path.dirname(os.path.abspath(path))
    return os.open(directory, DIR_NOFOLLOW), directory


@contextlib.contextmanager
def dir_locked(path: str, timeout: float = LOCK_WAIT_S):
    """Hold the exclusive lock of ``path``'s directory (flock on a directory fd).

    Serializes the read-modify-writes of the runtime files beside config.yaml
    (the overrides scope files, xid-events.yaml and their companions) between
    ``mokka ctl`` and the agent's kernellog: no lock file to leave behind on the
    host, and it works inside a container through the writable config bind. Any
    workload can take it too, so the wait is bounded: LockHeld names the holder.
    """
    fd, directory = _open_dir(path)
    try:
        with fd_locked(fd, directory, timeout):
            yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def fd_locked(fd: int, directory: str, timeout: float = LOCK_WAIT_S):
    """``dir_locked`` on a directory already open as ``fd``."""
    if not flock_within(fd, timeout):
        raise LockHeld(directory, holder_pid(fd), timeout)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def dir_locked_or_not(path: str, timeout: float, on_held):
    """``dir_locked`` for a writer that must never wait on a workload (the root agent):
    after ``timeout`` it goes on without the lock, having called ``on_held(LockHeld)``.
    Yields whether it holds the lock."""
    try:
        fd, directory = _open_dir(path)
    except OSError:
        yield False                  # no directory yet: nobody else can be writing in it
        return
    try:
        held = flock_within(fd, timeout)
        if not held:
            on_held(LockHeld(directory, holder_pid(fd), timeout))
        yield held
    finally:
        os.close(fd)
