"""One connection of the NRI driver: the socket, its codec state, who reads,
and how much is in flight (``mokka.nri.plugin`` drives it).

``Session`` keeps every message whole (one write lock) and lets one thread
read at a time (``read_lock``, the leader's); ``Admission`` bounds the
CreateContainers received and not yet answered, by count and by request
bytes, which is what stops reading when the runtime outpaces the plugin.

Turns: idle threads wait in ``wait_turn`` on an epoll that reports the
socket (or bytes the codec still holds) to ONE of them, once, until the
reader re-arms it in ``pass_turn``. So a reader that takes a request and
goes off to decide it wakes nobody: another thread is woken only when the
runtime actually sends more meanwhile. (Waiting on ``read_lock`` instead
would wake a follower on every request, which then fights the deciding
thread for the GIL: about 90 us of a 300 us round trip.)
"""

from __future__ import annotations

import os
import select
import socket
import threading

from mokka.nri.codec.conn import Connection


class Admission:
    """The in-flight bound: the reader acquires before handing a request to a
    worker and waits while the bound is reached; the reply's writer releases."""

    def __init__(self, max_count: int, max_bytes: int) -> None:
        # Taken directly on the fast paths (a C-level lock); the condition
        # over it only where someone waits or may be waiting.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0
        self._max_count, self._max_bytes = max_count, max_bytes
        self.count = 0
        self.bytes = 0

    def _full(self, size: int) -> bool:
        return self.count >= self._max_count or (
            self.count > 0 and self.bytes + size > self._max_bytes)

    def try_acquire(self, size: int) -> bool:
        with self._lock:
            if self._full(size):
                return False
            self.count += 1
            self.bytes += size
            return True

    def acquire(self, size: int, closed: threading.Event) -> bool:
        """Wait for room; False if the session closed first."""
        with self._lock:
            self._waiting += 1
            try:
                while self._full(size):
                    if closed.is_set():
                        return False
                    self._cond.wait(0.1)
            finally:
                self._waiting -= 1
            self.count += 1
            self.bytes += size
            return True

    def release(self, size: int) -> int:
        """Give back one request's room; how many are still in flight."""
        with self._lock:
            self.count -= 1
            self.bytes -= size
            if self._waiting:
                self._cond.notify()
            return self.count


def _eventfd():
    return open(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC), "rb", buffering=0)


#: A waiting thread re-checks ``closed`` this often even if no wake-up came.
_POLL_TIMEOUT_S = 5.0


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
        # Never closed by hand: a thread may still hold their numbers. They go
        # with the session object, once its last thread (and the driver) let go.
        self._poll = select.epoll()
        self._fd = sock.fileno()
        self._more_file = _eventfd()          # the codec holds bytes someone must look at
        self._closing_file = _eventfd()       # written once, never drained: wakes every waiter
        self._more, self._closing = self._more_file.fileno(), self._closing_file.fileno()
        self._poll.register(self._fd, select.EPOLLIN | select.EPOLLONESHOT)
        self._poll.register(self._more, select.EPOLLIN | select.EPOLLONESHOT)
        self._poll.register(self._closing, select.EPOLLIN)

    def wait_turn(self) -> bool:
        """Block until this thread is the one to read; False once the session closed.

        Only one waiting thread is woken per arming (EPOLLONESHOT), so
        taking ``read_lock`` afterwards rarely waits.
        """
        while not self.closed.is_set():
            ready = self._poll.poll(_POLL_TIMEOUT_S)
            for fd, _ in ready:
                if fd == self._closing:
                    return False
                if fd == self._more:
                    try:
                        os.eventfd_read(self._more)
                    except BlockingIOError:
                        pass
            if ready:
                return not self.closed.is_set()
        return False

    def pass_turn(self) -> None:
        """The reader, still holding ``read_lock``, hands reading on: the next
        bytes on the socket, or those the codec already holds, wake one waiter."""
        if self.closed.is_set():
            return
        try:
            if self.codec.buffered:
                os.eventfd_write(self._more, 1)
                self._poll.modify(self._more, select.EPOLLIN | select.EPOLLONESHOT)
            self._poll.modify(self._fd, select.EPOLLIN | select.EPOLLONESHOT)
        except (OSError, ValueError):       # closed meanwhile: the waiters are told by _closing
            pass

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
            os.eventfd_write(self._closing, 1)     # wakes every thread waiting for a turn
        except (OSError, ValueError):
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)   # wakes the reader blocked in recv
        except OSError:
            pass
        self.sock.close()
