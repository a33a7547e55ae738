"""Has anything under these paths changed? One poll(0) instead of a stat per path.

The node view (``mokka.nri.nodeview``) is valid while no stat signature of
its paths moves. Checking that costs a stat per path on every request; this
module lets it skip the check while the kernel reported nothing: inotify
watches on each directory the view reads and on every directory its path
resolves through (each ancestor, and each symlink's on the way), so an entry
created, removed, renamed, written or chmod-ed in a watched directory, a
watched directory moved, removed or replaced higher up, or a symlink on the
way retargeted, leaves an event behind. ``quiet`` is then one ``poll``.

Watches are added BEFORE the caller re-validates (its stat pass), so a change
is either seen by that pass or leaves an event for the next ``quiet``; never
neither. What inotify cannot see makes ``arm`` (or ``covers``) refuse, and
the caller keeps its stat pass: a watch the kernel refused (limits,
permissions), a symlink loop, a file that is a symlink.
Mounts made over a watched path raise no event either; callers bound how long
they trust ``quiet`` (``nodeview.REVALIDATE_S``).
"""

from __future__ import annotations

import errno
import os
import select

from inotify_simple import INotify, flags

#: Everything that can move a directory's stat signature, or that of a file in it.
MASK = (flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.MODIFY
        | flags.CLOSE_WRITE | flags.ATTRIB | flags.DELETE_SELF | flags.MOVE_SELF)
#: add_watch on these means the path is not there (yet): its creation shows
#: up as an event on the nearest ancestor that is.
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


#: Symlinks followed while resolving one path, at most (the kernel's limit).
MAX_HOPS = 40


def resolution_dirs(path: str) -> list[str] | None:
    """Every directory whose entries decide what ``path`` resolves to, and
    the directory it resolves to: the parent of each component, following
    each symlink on the way (a link retargeted is an event in the directory
    holding it). None for a symlink loop.

    Components that do not exist are kept as named: their creation is an
    event in the nearest ancestor that does.
    """
    todo = [part for part in path.split("/") if part]
    current = "/"
    out: list[str] = []
    hops = 0
    while todo:
        name = todo.pop(0)
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        out.append(current)
        candidate = os.path.join(current, name)
        try:
            target = os.readlink(candidate)
        except OSError:                   # not a link, or not there
            current = candidate
            continue
        hops += 1
        if hops > MAX_HOPS:
            return None
        todo[:0] = [part for part in target.split("/") if part]
        if target.startswith("/"):
            current = "/"
    out.append(current)
    return out


class ChangeWatch:
    """Watches on a fixed set of directories, each with every directory its
    resolution goes through (``resolution_dirs``).

    ``quiet()`` is True while no event arrived since the last ``arm()``;
    ``arm()`` drains the events and (re)adds the watches, so call it before
    re-validating. Not thread-safe: the node view calls it under its lock.
    """

    def __init__(self, directories: tuple[str, ...]) -> None:
        self._leaves = tuple(os.path.abspath(p) for p in directories if p)
        self._dirs: tuple[str, ...] = ()
        self._wds: dict[str, int] = {}
        # What the last arm() found, kept while no event says it may differ.
        self._dirty = True
        self._watched = False
        self._resolved: dict[str, bool] = {}
        try:
            self._inotify: INotify | None = INotify(nonblocking=True)
        except OSError:                   # out of instances: the caller keeps stat-ing
            self._inotify = None
            return
        self._poll = select.poll()
        self._poll.register(self._inotify.fileno(), select.POLLIN)

    def quiet(self) -> bool:
        """No event since the last ``arm`` (one syscall, no wait)."""
        return not self._poll.poll(0)

    def arm(self) -> bool:
        """Drain pending events and (re)watch; True if every directory that
        exists is watched. Re-validate after this, never before.

        With no event since the last call nothing can have moved: the watches
        stand as they are, at the cost of one poll.
        """
        inotify = self._inotify
        if inotify is None:
            return False
        if self._poll.poll(0):
            self._dirty = True
        if not self._dirty:
            return self._watched
        self._dirty = False
        self._resolved = {}
        try:
            while inotify.read(timeout=0):
                pass
        except OSError:
            self._dirty = True
            return False
        # Resolved anew each time: an event may be a symlink retargeted.
        dirs = self._resolve()
        ok = dirs is not None
        self._dirs = dirs or ()
        wds: dict[str, int] = {}
        for directory in self._dirs:
            try:
                wds[directory] = inotify.add_watch(directory, MASK)
            except OSError as exc:
                if exc.errno not in _ABSENT:
                    ok = False            # exists but cannot be watched
        # Directories no longer on the way (moved, or a link retargeted).
        for wd in set(self._wds.values()) - set(wds.values()):
            try:
                inotify.rm_watch(wd)
            except OSError:               # gone with its directory
                pass
        self._wds = wds
        # A link retargeted before its directory was watched left no event:
        # resolving again, watched, tells.
        if ok and self._resolve() != dirs:
            ok, self._dirty = False, True
        self._watched = ok
        return ok

    def covers(self, files: tuple[str, ...]) -> bool:
        """Whether events in the watched directories tell of every change to
        ``files`` (entries of those directories): none is a symlink, whose
        target could change with no event here. Remembered until the next
        event (only an event can make one a symlink)."""
        resolved = self._resolved
        for path in files:
            plain = resolved.get(path)
            if plain is None:
                plain = resolved[path] = not os.path.islink(path)
            if not plain:
                return False
        return True

    def _resolve(self) -> tuple[str, ...] | None:
        dirs: dict[str, None] = {}
        for leaf in self._leaves:
            resolved = resolution_dirs(leaf)
            if resolved is None:
                return None
            dirs.update(dict.fromkeys(resolved))
        return tuple(dirs)

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
