"""The agent's run loop and its two one-shot modes, wired from parts built by cmd/agent.py.

The loop waits in select() on the source's inotify fd and a wake pipe, so an
idle node costs no CPU between resyncs. A failed pass is retried with backoff
(level-triggered: the node keeps converging toward the last good state).
"""

from __future__ import annotations

import os
import select
import threading
import time
from dataclasses import dataclass

from mokka.agent.health import Health
from mokka.agent.hostfs import HostFS
from mokka.agent.lock import StagingLock
from mokka.agent.reconciler import PassResult, Reconciler
from mokka.agent.rootlock import RootLock
from mokka.core.mounts import unmount
from mokka.agent.source import FileSource

LOCK_OWNER = "agent:lock"
ROOT_LOCK_OWNER = "agent:root-lock"       # removed last, after the manifest (see finish)
RETRY_MIN_S, RETRY_MAX_S = 1.0, 60.0


@dataclass
class Agent:
    source: FileSource
    reconciler: Reconciler
    health: Health
    fs: HostFS
    lock: StagingLock
    log: object
    clock: object = time.monotonic
    root_lock: RootLock | None = None       # held by the command before anything else
    runtime_dirs: tuple[str, ...] = ()      # emptied at teardown (HostFS.sweep)

    def __post_init__(self):
        self._pending = None
        self._retry_at: float | None = None
        self._backoff = RETRY_MIN_S

    def prepare(self) -> None:
        """Open the lock (recording it if we made it) and clear a killed run's temp files."""
        if self.root_lock is not None:
            self.fs.manifest.intend(ROOT_LOCK_OWNER, [self.root_lock.path], self.root_lock.dirs)
        dirs, files = self.lock.plan()
        if files:                      # write-ahead: recorded before it is made
            self.fs.manifest.intend(LOCK_OWNER, files, dirs)
        self.lock.open()
        self.fs.clean_temps()

    def step(self, start_daemons: bool = True, polled=None) -> PassResult | None:
        """Poll the source (unless ``polled`` holds what a poll just returned) and converge."""
        now = self.clock()
        desired = polled if polled is not None else self.source.poll_once(now)
        if self.source.rejected is not None:
            self.health.rejected(self.source.rejected.file, self.source.rejected.reason)
        else:
            self.health.accepted()
        if desired is None and self._retry_at is not None and now >= self._retry_at:
            desired = self._pending
        if desired is None:
            return None
        result = self.reconciler.reconcile(desired, start_daemons)
        if result.ok:
            self._pending, self._retry_at, self._backoff = None, None, RETRY_MIN_S
        else:
            self._pending, self._retry_at = desired, self.clock() + self._backoff
            self._backoff = min(self._backoff * 2, RETRY_MAX_S)
        return result

    def _timeout(self) -> float | None:
        now = self.clock()
        t = self.source.next_timeout(now)
        if self._retry_at is not None:
            r = max(self._retry_at - now, 0.0)
            t = r if t is None else min(t, r)
        return t

    def run(self, stop: threading.Event, wake_fd: int) -> None:
        while not stop.is_set():
            try:
                self.step()
            except Exception:  # noqa: BLE001 - the loop outlives one bad pass
                self.log.exception("reconcile pass crashed; retrying")
                self._retry_at = self.clock() + self._backoff
            if stop.is_set():
                break
            select.select([self.source.fileno(), wake_fd], [], [], self._timeout())

    def teardown(self, timeout: float) -> bool:
        return self.reconciler.teardown(timeout, after=lambda: finish(self.fs, self.runtime_dirs))


class Unfinished(Exception):
    """Teardown left something the manifest names: the manifest stays for the next run."""


def finish(fs: HostFS, runtime_dirs: tuple[str, ...] = ()) -> None:
    """After every Discard: whatever the manifest still names and whatever others wrote
    into ``runtime_dirs``, then the manifest itself.

    The manifest is deleted only once nothing it names is left (every mount undone,
    every owner's paths gone), so a teardown that cannot finish leaves it for the
    next one. The root lock goes last, after the manifest: until then a second
    agent is still refused.
    """
    for target in fs.manifest.mounts():
        unmount(target)
        fs.manifest.drop_mount(target)
    for owner in fs.manifest.owners():   # owners no simulator claimed (e.g. the lock file)
        if owner != ROOT_LOCK_OWNER:
            fs.remove_owner(owner)
    fs.sweep(runtime_dirs)
    fs.clean_temps()
    left = [o for o in fs.manifest.owners() if o != ROOT_LOCK_OWNER]
    if left or fs.manifest.mounts():
        raise Unfinished(f"still staged: {', '.join(left + sorted(fs.manifest.mounts()))}")
    last = fs.manifest.paths(ROOT_LOCK_OWNER)
    dirs = fs.manifest.dirs()
    fs.manifest.delete()
    for path in last:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    for d in sorted(dirs, key=lambda p: p.count(os.sep), reverse=True):
        try:
            os.rmdir(d)
        except OSError:                  # not empty (someone else's files) or gone: leave it
            pass
