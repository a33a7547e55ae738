"""Converge a set of host paths owned by one simulator, through the manifest.

A simulator describes the tree it wants as ``{absolute path: File|Link|CharDev|Dir}``;
``converge`` records it (write-ahead), writes what differs, removes what the
owner had before but no longer wants, and drops directories that emptied.
Device nodes fall back to empty regular files where mknod is not permitted
(no CAP_MKNOD, or a user namespace), logged once. A path that already existed
before the agent first wrote it is moved aside (``.NAME.mokka-orig`` beside it,
a hidden name neither CDI nor NFD reads) and moved back when the agent removes
its own: teardown leaves the host as it was found.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

from mokka.agent.manifest import Manifest
from mokka.core.fsutil import (DIR_NOFOLLOW, FAULT, atomic_link, atomic_symlink, atomic_write, remove_at,
                               remove_path)


@dataclass(frozen=True)
class File:
    data: bytes
    mode: int = 0o644


@dataclass(frozen=True)
class Link:
    target: str


@dataclass(frozen=True)
class CharDev:
    major: int
    minor: int
    mode: int = 0o666


@dataclass(frozen=True)
class Dir:
    """A directory the tree keeps even when nothing is in it (a module's empty ``holders/``)."""
    mode: int = 0o755


Entry = File | Link | CharDev | Dir
#: Suffixes of the temp names fsutil.atomic_write, atomic_symlink and _chardev use.
_TEMP_SUFFIXES = (".tmp", ".lnk", ".dev")
BACKUP_SUFFIX = ".mokka-orig"


def backup_path(path: str) -> str:
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}{BACKUP_SUFFIX}")


class HostFS:
    def __init__(self, manifest: Manifest, log):
        self.manifest = manifest
        self._log = log
        self._mknod_ok = True
        self._mknod_mu = threading.Lock()

    # --- converge ----------------------------------------------------------
    def converge(self, owner: str, tree: dict[str, Entry], extra: Iterable[str] = (),
                 writer: Callable[[], object] | None = None, share_inodes: bool = False) -> int:
        """Make ``owner``'s paths exactly ``tree`` plus ``extra`` (written by ``writer``).

        ``share_inodes``: for a tree no workload can write (outside the node's config
        directories, which containers get writable), each set of read-only files with
        the same bytes and mode is one inode of many names. A node's sysfs trees are
        thousands of such files (every HCA's 21 zero counters), and on a disk a new
        inode costs many times a new name. The agent changes a file by renaming a new
        one over it, which gives that path an inode of its own.
        """
        planned = set(tree) | set(extra)
        for path in planned:
            if not self.manifest.owned(path):
                self._preserve(path)
        dirs = self._dirs_for(planned)
        self.manifest.intend(owner, planned, dirs)
        for d in sorted(dirs):                # parents first; recorded before they are made
            os.makedirs(d, exist_ok=True)
        names: dict[tuple[bytes, int], str] | None = {} if share_inodes else None
        # In the tree's order: a document pair's companion before its YAML (mokka.engine.pair).
        changed = sum(1 for path, entry in tree.items() if self.write(path, entry, names))
        if writer is not None:
            writer()
        stale = self.manifest.paths(owner) - planned
        dropped = self._remove(stale)
        self.manifest.settle(owner, planned, dropped)
        return changed + len(stale)

    def withdraw(self, owner: str, path: str) -> None:
        """Remove one path an owner published (it stays the owner's until settled)."""
        self._unlink(path)
        self.manifest.settle(owner, self.manifest.paths(owner) - {path})

    def remove_owner(self, owner: str) -> None:
        dropped = self._remove(self.manifest.paths(owner))
        self.manifest.settle(owner, (), dropped)

    def sweep(self, dirs: Iterable[str]) -> int:
        """Empty each of ``dirs`` the agent created, whoever wrote there; the count removed.

        For the directories others write into (names.NODE_CONFIG_DIRS: ``mokka ctl``,
        ``nvidia-smi -r``, the mock NVML and containers through their writable bind):
        what is in them goes with the tree, whatever it is (a link, a FIFO, a tree of any
        depth), through fsutil.remove_at, which never follows a link. An entry that cannot
        be removed is logged and the rest still go.
        """
        created, removed = self.manifest.dirs(), 0
        for d in dirs:
            if d in created:
                removed += self._empty(d, lambda name: True, "removed what others wrote into the staged tree")
        return removed

    def clean_temps(self) -> int:
        """Remove temp files a killed writer left in directories the agent created.

        fsutil and ``_chardev`` write through dot-named temps and a rename; a kill -9
        between the two leaves one behind, which no manifest entry names. A workload may
        have put anything at such a name in a config directory: whatever it is goes.
        """
        removed = 0
        for d in self.manifest.dirs():
            removed += self._empty(d, is_temp_name, "")
        return removed

    def _empty(self, directory: str, chosen: Callable[[str], bool], say: str) -> int:
        """Remove the entries of ``directory`` (opened without following) that ``chosen``
        names; how many went. Never raises for one entry: it is logged, the rest go on."""
        try:
            fd = os.open(directory, DIR_NOFOLLOW)
        except OSError:
            return 0
        removed = 0
        try:
            for name in os.listdir(fd):
                if not chosen(name):
                    continue
                try:
                    removed += remove_at(fd, name)
                except OSError as exc:
                    self._log.warning("cannot remove an entry of the staged tree", path=os.path.join(directory, name),
                                      error=str(exc))
        finally:
            os.close(fd)
        if removed and say:
            self._log.info(say, dir=directory, entries=removed)
        return removed

    def _dirs_for(self, paths: set[str]) -> set[str]:
        """The directories ``paths`` need that do not exist yet, each one looked at once."""
        missing: set[str] = set()
        present: set[str] = set()
        for parent in {os.path.dirname(p) for p in paths}:
            chain, d = [], parent
            while d not in missing and d not in present:
                if os.path.isdir(d):
                    present.add(d)
                    break
                chain.append(d)
                up = os.path.dirname(d)
                if up == d:
                    break
                d = up
            missing.update(chain)
        return missing

    def _remove(self, paths: Iterable[str]) -> set[str]:
        """Unlink paths, then rmdir agent-made parents that emptied; return those removed."""
        parents = set()
        # Deepest first: a directory entry goes after what the owner had in it.
        for path in sorted(paths, key=lambda p: p.count(os.sep), reverse=True):
            self._unlink(path)
            parents.add(os.path.dirname(path))
        created, dropped = self.manifest.dirs(), set()
        for d in sorted(parents, key=lambda p: p.count(os.sep), reverse=True):
            while d in created and _rmdir(d):
                dropped.add(d)
                d = os.path.dirname(d)
        return dropped

    # --- single entries ----------------------------------------------------
    def write(self, path: str, entry: Entry, names: dict[tuple[bytes, int], str] | None = None) -> bool:
        """Put ``entry`` at ``path``, whatever is there: a rename replaces a link, a FIFO or
        a device without following or opening it; a directory (a workload can make one in
        driver/config) is removed first, as rename cannot replace it.
        With ``names`` (read-only content -> the first path written with it, one
        converge's), a read-only file becomes another name of that path's file.
        """
        try:
            return self._write(path, entry, names)
        except IsADirectoryError:
            remove_tree_quiet(path)
            self._log.warning("removed a directory where the staged tree keeps a file", path=path)
            return self._write(path, entry, names)

    def _write(self, path: str, entry: Entry, names: dict[tuple[bytes, int], str] | None) -> bool:
        if isinstance(entry, File):
            if names is not None and not entry.mode & 0o222:
                first = names.setdefault((entry.data, entry.mode), path)
                if first != path:
                    return atomic_link(first, path, entry.data, entry.mode, sync=False)
            return atomic_write(path, entry.data, entry.mode, sync=False)   # rebuilt at each start
        if isinstance(entry, Link):
            return atomic_symlink(entry.target, path)
        if isinstance(entry, Dir):
            return _mkdir(path, entry.mode)
        return self._chardev(path, entry)

    def _chardev(self, path: str, dev: CharDev) -> bool:
        rdev = os.makedev(dev.major, dev.minor)
        try:
            st = os.lstat(path)
            if stat.S_IMODE(st.st_mode) == dev.mode and (
                    (stat.S_ISCHR(st.st_mode) and st.st_rdev == rdev)
                    or (not self._mknod_ok and stat.S_ISREG(st.st_mode) and st.st_size == 0)):
                return False
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{threading.get_ident()}.dev")
        unlink_quiet(tmp)
        if self._mknod_ok:
            try:
                os.mknod(tmp, stat.S_IFCHR | dev.mode, rdev)
            except PermissionError:
                self._mknod_denied()
        if not self._mknod_ok:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, dev.mode))
        os.chmod(tmp, dev.mode)               # mknod honours the umask; the contract is 0666
        FAULT.tick()
        os.replace(tmp, path)
        return True

    def _mknod_denied(self) -> None:
        with self._mknod_mu:
            if self._mknod_ok:
                self._mknod_ok = False
                self._log.warning("mknod not permitted: creating device paths as empty regular "
                                  "files (visible, but not openable as devices)")

    def _preserve(self, path: str) -> None:
        """Move a pre-existing ``path`` aside before the agent's first write to it.

        Recorded first (write-ahead), then renamed: a kill -9 in between is
        finished by the next run, which finds the record and the file still there.
        """
        backup = self.manifest.backup_of(path)
        if backup is None:
            if not os.path.lexists(path):
                return
            backup = backup_path(path)
            self.manifest.add_backup(path, backup)
        if os.path.lexists(path) and not os.path.lexists(backup):
            os.rename(path, backup)
            self._log.info("moved a pre-existing file aside; teardown restores it",
                           path=path, backup=backup)

    def _unlink(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            _rmdir(path)
        backup = self.manifest.backup_of(path)
        if backup is not None:
            if os.path.lexists(backup) and not os.path.lexists(path):
                os.rename(backup, path)           # put the host's own file back
            self.manifest.drop_backup(path)


def _mkdir(path: str, mode: int) -> bool:
    """Make ``path`` a directory (whatever else is there goes, never followed); False when
    it already was one."""
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            return False
        os.unlink(path)
    except FileNotFoundError:
        pass
    os.mkdir(path, mode)
    os.chmod(path, mode)                  # mkdir honours the umask
    return True


def _rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.EBUSY, errno.ENOTDIR):
            return False
        raise


def unlink_quiet(path: str) -> None:
    """Remove a file that may already be gone."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def is_temp_name(name: str) -> bool:
    """A name fsutil's writers and ``_chardev`` give a file before its rename."""
    return name.startswith(".") and name.endswith(_TEMP_SUFFIXES)


def remove_tree_quiet(path: str) -> None:
    """Remove ``path``, whatever it is, never following it (fsutil.remove_path); a
    failure is left for teardown's sweep, which names it."""
    try:
        remove_path(path)
    except OSError:
        pass
