"""The staging lock: held exclusively while the tree changes, shared by the NRI plugin.

It lives outside the overlay (a memory-backed emptyDir in the chart) so no
workload can hold it. ``acquire(timeout)`` polls a non-blocking flock because
flock itself has no timeout; teardown uses it to give up after half of the
shutdown deadline.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

from mokka.agent.manifest import missing_dirs

_POLL_S = 0.02


class StagingLock:
    def __init__(self, path: str, clock=time.monotonic):
        self.path = path
        self._clock = clock
        self._fd: int | None = None
        self.held = False
        # flock is per open file: two threads of this process would both "get" it
        # through the one fd, so an in-process mutex orders Stage and teardown.
        self._mu = threading.Lock()
        self._holder: int | None = None
        #: Directories and file this process created, so teardown can remove them.
        self.created: list[str] = []

    def plan(self) -> tuple[list[str], list[str]]:
        """(directories, file) ``open`` would create now: recorded before it creates them."""
        if self._fd is not None:
            return [], []
        return missing_dirs(self.path), ([] if os.path.exists(self.path) else [self.path])

    def open(self) -> None:
        if self._fd is not None:
            return
        created = missing_dirs(self.path)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        existed = os.path.exists(self.path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self.created = created + ([] if existed else [self.path])

    def acquire(self, timeout: float | None = None) -> bool:
        self.open()
        if timeout is None:
            self._mu.acquire()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            return self._took()
        deadline = self._clock() + max(timeout, 0.0)
        if not self._mu.acquire(timeout=max(timeout, 0.0)):
            return False
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self._took()
            except BlockingIOError:
                if self._clock() >= deadline:
                    self._mu.release()
                    return False
                time.sleep(_POLL_S)

    def _took(self) -> bool:
        self.held, self._holder = True, threading.get_ident()
        return True

    def release(self) -> None:
        """Release if the calling thread holds it (teardown may run without it)."""
        if self._fd is not None and self.held and self._holder == threading.get_ident():
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            self.held, self._holder = False, None
            self._mu.release()

    def close(self) -> None:
        self.release()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
