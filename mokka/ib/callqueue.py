"""Thunks other threads hand to a selector loop's own thread.

``call_soon`` queues a thunk and wakes the loop through a pipe; the loop registers
``fileno()`` for reading and, when it is readable, ``run_pending()`` empties the
pipe and runs what was queued, in order, on the loop's thread. mock-ib's socket
server and its fabric relay each own one.
"""

from __future__ import annotations

import os
import threading
from typing import Callable


class CallQueue:
    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        self._lock = threading.Lock()
        self._calls: list[Callable[[], object]] = []

    def fileno(self) -> int:
        return self._read

    def call_soon(self, thunk: Callable[[], object]) -> None:
        with self._lock:
            self._calls.append(thunk)
        self.wake()

    def wake(self) -> None:
        """Make the loop's select return (a stop, say) without queueing anything."""
        try:
            os.write(self._write, b"x")
        except OSError:        # closed, or the pipe is full: the loop wakes either way
            pass

    def run_pending(self) -> None:
        try:
            while os.read(self._read, 4096):
                pass
        except BlockingIOError:
            pass
        with self._lock:
            calls, self._calls = self._calls, []
        for thunk in calls:
            thunk()

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)
