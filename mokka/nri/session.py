"""One connection of the NRI driver: the socket, its codec state, who reads,
and how much is in flight (``mokka.nri.plugin`` drives it).

``Session`` keeps every message whole (one write lock) and lets one thread
read at a time (``read_lock``, the leader's); ``Admission`` bounds the
CreateContainers received and not yet answered, by count and by request
bytes, which is what stops reading when the runtime outpaces the plugin.
"""

from __future__ import annotations

import socket
import threading

from mokka.nri.codec.conn import Connection


class Admission:
    """The in-flight bound: the reader acquires before handing a request to a
    worker and waits while the bound is reached; the reply's writer releases."""

    def __init__(self, max_count: int, max_bytes: int) -> None:
        self._cond = threading.Condition()
        self._max_count, self._max_bytes = max_count, max_bytes
        self.count = 0
        self.bytes = 0

    def _full(self, size: int) -> bool:
        return self.count >= self._max_count or (
            self.count > 0 and self.bytes + size > self._max_bytes)

    def try_acquire(self, size: int) -> bool:
        with self._cond:
            if self._full(size):
                return False
            self.count += 1
            self.bytes += size
            return True

    def acquire(self, size: int, closed: threading.Event) -> bool:
        """Wait for room; False if the session closed first."""
        with self._cond:
            while self._full(size):
                if closed.is_set():
                    return False
                self._cond.wait(0.1)
            self.count += 1
            self.bytes += size
            return True

    def release(self, size: int) -> int:
        """Give back one request's room; how many are still in flight."""
        with self._cond:
            self.count -= 1
            self.bytes -= size
            self._cond.notify()
            return self.count


class Session:
    """One connected socket: the codec state plus a lock that keeps messages whole."""

    def __init__(self, sock: socket.socket, max_in_flight: int = 4,
                 max_in_flight_bytes: int = 4 << 20) -> None:
        self.sock = sock
        self.codec = Connection()
        self.closed = threading.Event()
        self._write_lock = threading.Lock()
        self.read_lock = threading.Lock()      # held by the one thread reading (the leader)
        self.admission = Admission(max_in_flight, max_in_flight_bytes)
        self.overload_lock = threading.Lock()
        self.overloaded_since: float | None = None
        self.overload_logged = False
        self.configured = False
        self.end_reason = "connection closed by the runtime"

    def end(self, reason: str) -> None:
        """Close, keeping the first reason given."""
        if not self.closed.is_set():
            self.end_reason = reason
        self.close()

    def send(self, data: bytes) -> bool:
        with self._write_lock:
            if self.closed.is_set():
                return False
            try:
                self.sock.sendall(data)
                return True
            except OSError:
                self.close()
                return False

    def close(self) -> None:
        self.closed.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)   # wakes the reader blocked in recv
        except OSError:
            pass
        self.sock.close()
