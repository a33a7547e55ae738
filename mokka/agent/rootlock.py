"""One node agent per host root: an exclusive flock held for the process's whole life.

Not the staging lock: that one is shared with the NRI plugin and lives in a
per-pod emptyDir, so two agent pods (a DaemonSet rollout, a hand-run agent)
would each hold their own. This file is at ``names.AGENT_LOCK_PATH`` under the
host root, which every agent on the node sees. The holder writes its pid into
it, so a refused agent can say who holds it. ``acquire`` never waits: a second
agent, ``--once`` or ``--teardown`` refuses at once and has changed nothing.

The file and the directories made for it are recorded in the agent's manifest
like everything else it creates; teardown unlinks the file last, after the
manifest is gone, while still holding it. An agent that opened the old inode
just before then checks, after locking, that the path still names the inode it
locked, and starts over if not.
"""

from __future__ import annotations

import fcntl
import json
import os

from mokka.agent.manifest import missing_dirs
from mokka.core.fsutil import holder_pid


class RootLockHeld(Exception):
    def __init__(self, path: str, pid: str):
        self.path, self.pid = path, pid
        who = f"pid {pid}" if pid else "a process in another pid namespace"
        super().__init__(f"another node-agent ({who}) holds {path}: one agent per host root; "
                         "stop it first, or pass another --host-root")


class RootLock:
    def __init__(self, path: str, homes: tuple[str, ...] = (), anchor: str = "/"):
        self.path = path
        self.anchor = anchor          # the host root: exists, and is the same for every agent
        self.homes = homes            # directories the agent will make (the overlay root)
        self._fd: int | None = None
        #: Directories and file this process created (outermost first, the file last).
        self.created: list[str] = []
        #: Every directory an agent made for the lock or the homes, this run or an earlier one.
        self.dirs: list[str] = []

    def acquire(self) -> None:
        """Take the lock or raise RootLockHeld, never waiting on the other agent.

        Two agents starting together on a fresh root would both see the lock's
        directories missing, and the loser's would go unrecorded: making them,
        opening the file and trying the lock happen under a brief flock on the
        host root directory, which every agent shares.
        """
        if self._fd is not None:
            return
        existing = self.anchor               # a host root not made yet: its nearest ancestor
        while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
            existing = os.path.dirname(existing)
        anchor = os.open(existing, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(anchor, fcntl.LOCK_EX)
            self._acquire()
        finally:
            os.close(anchor)

    def _acquire(self) -> None:
        created = missing_dirs(self.path)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        for _ in range(100):                  # each retry means the holder just unlinked it
            existed = os.path.exists(self.path)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = holder_pid(fd)
                os.close(fd)
                raise RootLockHeld(self.path, pid) from None
            try:
                same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            self._fd = fd
            self.created = created + ([] if existed else [self.path])
            self._record(created)
            return
        raise OSError(f"{self.path}: replaced under us 100 times in a row")

    def _record(self, created: list[str]) -> None:
        """Write-ahead for the directories made before the manifest can exist.

        The lock file holds the list (JSON) of directories agents made for it and
        for ``homes``, written before any home is made; a run killed before its
        first manifest save leaves them named here, and the next run adopts them.
        """
        try:
            recorded = json.loads(os.pread(self._fd, 1 << 16, 0) or b"[]")
            # Only directories on the way to the lock or a home: nothing else is ever ours.
            ours = [self.path, *self.homes]
            below = self.anchor.rstrip("/") + "/"
            recorded = [d for d in recorded if isinstance(d, str) and d.startswith(below) and any(
                p.startswith(d.rstrip("/") + "/") or p == d for p in ours)] \
                if isinstance(recorded, list) else []
        except ValueError:
            recorded = []
        wanted = list(recorded)
        for d in created + [d for home in self.homes for d in missing_dirs(os.path.join(home, "x"))]:
            if d not in wanted:
                wanted.append(d)
        if wanted != recorded:
            data = json.dumps(wanted).encode()
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, data, 0)
        self.dirs = wanted

    def close(self) -> None:
        """Unlock (the process's exit does the same). Teardown unlinks the file first."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def undo(self) -> None:
        """Unlock and remove what ``acquire`` created: the agent could not start after all."""
        for path in reversed(self.created):
            try:
                os.unlink(path) if path == self.path else os.rmdir(path)
            except OSError:
                break
        self.created = []
        self.close()
