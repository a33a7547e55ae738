"""mock-ib's socket driver: one thread, one selector, the sessions do the deciding.

Serves ``run/mock-ib.sock`` (mode 0666) under the overlay. Each connection owns a
``Session``; a connection that breaks the protocol, or stops reading while its
outbox passes ``MAX_OUTBOX``, is closed alone. ``reload`` swaps the fabric in one
assignment: open ports keep their connection and see the new profile on their
next MAD. The optional relay (``mokka.ib.relay``) plugs in through ``relay``.
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import threading

from mokka.ib import wire
from mokka.ib.callqueue import CallQueue
from mokka.ib.fabric import Fabric, Hca
from mokka.ib.session import Relay, Session, relayed_reply

MAX_OUTBOX = 1 << 20
READ_SIZE = 65536
SOCKET_MODE = 0o666


SUN_PATH_MAX = 107                    # sockaddr_un.sun_path, less its NUL


def bind_unix(path: str) -> socket.socket:
    """A listening socket at ``path``, put in place by rename (mode 0666).

    The temporary name is short (``.ib<pid>``) so a path that fits fits
    while binding too; a longer path is one clear error, not a truncated bind.
    """
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".ib{os.getpid()}")
    if len(path.encode()) > SUN_PATH_MAX or len(tmp.encode()) > SUN_PATH_MAX:
        raise OSError(errno.ENAMETOOLONG, f"socket path longer than {SUN_PATH_MAX} bytes", path)
    os.makedirs(directory, exist_ok=True)
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(tmp)
        os.chmod(tmp, SOCKET_MODE)
        sock.listen(64)
        os.replace(tmp, path)
    except BaseException:
        sock.close()
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    sock.setblocking(False)
    return sock


class _Conn:
    __slots__ = ("sock", "session", "outbox")

    def __init__(self, sock: socket.socket, session: Session):
        self.sock, self.session, self.outbox = sock, session, bytearray()


class Server:
    def __init__(self, path: str, fabric: Fabric, log, relay=None):
        self.path = path
        self.log = log
        self.relay = relay
        self._fabric = fabric
        self._sel = selectors.DefaultSelector()
        self._conns: dict[int, _Conn] = {}
        self._stop = threading.Event()
        self._calls = CallQueue()            # thunks queued by other threads (relay answers)
        self._listener: socket.socket | None = None
        self.ready = threading.Event()

    # --- state other threads may touch -------------------------------------------------
    @property
    def fabric(self) -> Fabric:
        return self._fabric

    def reload(self, fabric: Fabric) -> None:
        self._fabric = fabric
        if self.relay is not None:
            self.relay.announce(fabric)

    def directory(self) -> tuple[Hca, ...]:
        return self.relay.directory() if self.relay is not None else ()

    def stop(self) -> None:
        self._stop.set()
        self._calls.wake()

    def call_soon(self, thunk) -> None:
        self._calls.call_soon(thunk)

    @property
    def connections(self) -> int:
        return len(self._conns)

    # --- the loop ---------------------------------------------------------------------------
    def serve(self) -> None:
        self._listener = bind_unix(self.path)
        self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        self._sel.register(self._calls, selectors.EVENT_READ, "wake")
        self.ready.set()
        self.log.info("mock-ib serving", socket=self.path, hcas=len(self._fabric.hcas),
                      node=self._fabric.node_name)
        try:
            while not self._stop.is_set():
                for key, events in self._sel.select():
                    if key.data == "listen":
                        self._accept()
                    elif key.data == "wake":
                        self._calls.run_pending()
                    else:
                        self._service(key.data, events)
        finally:
            self._close_all()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:           # EMFILE and friends: keep serving the others
                self.log.warning("accept failed", error=str(exc))
                return
            sock.setblocking(False)
            conn = _Conn(sock, Session(fabric=lambda: self._fabric, directory=self.directory))
            self._conns[sock.fileno()] = conn
            self._sel.register(sock, selectors.EVENT_READ, conn)

    def _service(self, conn: _Conn, events: int) -> None:
        if events & selectors.EVENT_READ:
            try:
                data = conn.sock.recv(READ_SIZE)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                data = b""
            if data == b"":
                self._close(conn)
                return
            if data:
                try:
                    actions = conn.session.receive(data)
                except wire.WireError as exc:
                    self.log.warning("closing a client that broke the protocol", error=str(exc))
                    self._close(conn)
                    return
                for action in actions:
                    if isinstance(action, Relay):
                        self._relay(conn, action)
                    else:
                        conn.outbox += action
        self._flush(conn)

    def _relay(self, conn: _Conn, action: Relay) -> None:
        def answered(status: int, slid: int, mad: bytes) -> None:
            if conn.sock.fileno() in self._conns:   # still connected
                conn.outbox += relayed_reply(conn.session, action.agent_id, status, slid, mad,
                                             action.addr)
                self._flush(conn)

        if self.relay is None:
            answered(errno.ETIMEDOUT, 0, action.mad)
            return
        self.relay.forward(action.dlid, action.slid, action.mad,
                           lambda *args: self.call_soon(lambda: answered(*args)))

    def _flush(self, conn: _Conn) -> None:
        if conn.outbox:
            try:
                sent = conn.sock.send(conn.outbox)
                del conn.outbox[:sent]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._close(conn)
                return
        if len(conn.outbox) > MAX_OUTBOX:
            self.log.warning("closing a client that stopped reading", pending=len(conn.outbox))
            self._close(conn)
            return
        if conn.session.done and not conn.outbox:
            self._close(conn)
            return
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.outbox else 0)
        try:
            self._sel.modify(conn.sock, want, conn)
        except (KeyError, ValueError):
            pass

    def _close(self, conn: _Conn) -> None:
        fd = conn.sock.fileno()
        if fd >= 0 and self._conns.pop(fd, None) is not None:
            try:
                self._sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        conn.sock.close()

    def _close_all(self) -> None:
        for conn in list(self._conns.values()):
            self._close(conn)
        if self._listener is not None:
            self._sel.unregister(self._listener)
            self._listener.close()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
        self._sel.close()
        self._calls.close()
