"""mock-ib's fabric relay: two nodes' mock HCAs see each other over TCP on loopback.

Every relay listens on its own address and dials each peer; on every
connection, both sides first send HELLO (their node name and HCAs), again after
a Reload. A MAD whose destination LID a peer announced travels as FORWARD; the
peer answers it with its own responder and sends ANSWER back. The directory
(every peer HCA) lets the local SA resolve a peer's GUID (``ibping -G``).

Frames are mokka.ib.wire's (4-byte length, 1-byte type). Addresses are limited
to 127.0.0.0/8: this relay is for nodes sharing one host (tests, kind), never
a network. A peer that breaks the protocol is dropped; one not up yet is dialled
again every ``REDIAL_S`` seconds.
"""

from __future__ import annotations

import errno
import ipaddress
import itertools
import selectors
import socket
import struct
import threading
import time

from mokka.core import infiniband as ibm
from mokka.core import names
from mokka.ib import mad as m
from mokka.ib import responder, wire
from mokka.ib.callqueue import CallQueue
from mokka.ib.fabric import Fabric

HELLO, FORWARD, ANSWER = 0x10, 0x11, 0x12
REDIAL_S = 0.5
MAX_OUTBOX = 1 << 20
_HCA = struct.Struct(f">{wire.NAME_LEN}sHHQQI64s")
_FORWARD = struct.Struct(">IHH")
_ANSWER = struct.Struct(">IiH")


def parse_addr(text: str) -> tuple[str, int]:
    """``ADDR[:PORT]`` on 127.0.0.0/8 (default port names.IB_RELAY_PORT)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = port, str(names.IB_RELAY_PORT)
    try:
        ip = ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        raise ValueError(f"relay address {text!r}: want IPV4[:PORT]") from None
    if ip.version != 4 or not ip.is_loopback:
        raise ValueError(f"relay address {text!r} is outside 127.0.0.0/8")
    if not 0 < number < 65536:
        raise ValueError(f"relay address {text!r}: port out of range")
    return str(ip), number


def hello(fabric: Fabric) -> bytes:
    name = fabric.node_name.encode()[:64]
    body = struct.pack(">B", len(name)) + name + b"".join(
        _HCA.pack(h.name.encode()[:wire.NAME_LEN - 1], h.lid, h.sm_lid, h.node_guid, h.port_guid,
                  h.rate_gbps, h.node_desc.encode()[:64]) for h in fabric.hcas)
    return wire.frame(HELLO, body)


def parse_hello(payload: bytes) -> tuple[str, tuple[ibm.Hca, ...]]:
    if not payload or len(payload) < 1 + payload[0]:
        raise wire.WireError("short HELLO")
    size = payload[0]
    node = payload[1:1 + size].decode("utf-8", "replace")
    rest = payload[1 + size:]
    if len(rest) % _HCA.size:
        raise wire.WireError("HELLO with a partial HCA record")
    hcas = []
    for i, (name, lid, sm_lid, nguid, pguid, rate, desc) in enumerate(_HCA.iter_unpack(rest)):
        hcas.append(ibm.Hca(index=i, name=name.split(b"\0")[0].decode("ascii", "replace"),
                            node_guid=nguid, port_guid=pguid, lid=lid, sm_lid=sm_lid,
                            node_desc=desc.split(b"\0")[0].decode("utf-8", "replace"),
                            port_state="ACTIVE", phys_state="LinkUp", rate_gbps=rate,
                            link_layer="InfiniBand", fw_version="", hw_rev="", board_id="",
                            hca_type=""))
    return node, tuple(hcas)


def answer_forward(fabric: Fabric, dlid: int, mad_bytes: bytes) -> tuple[int, int, bytes]:
    """(status, slid, reply MAD) for a MAD a peer forwarded to ``dlid`` (pure)."""
    target = fabric.by_lid(dlid)
    if target is None:
        return errno.ETIMEDOUT, 0, mad_bytes
    try:
        outcome = responder.answer(fabric, target, m.decode(mad_bytes), dlid)
    except m.MadError:
        return errno.EINVAL, 0, mad_bytes
    if isinstance(outcome, responder.Reply):
        return 0, outcome.slid, m.encode(outcome.mad)
    return errno.ETIMEDOUT, 0, mad_bytes


class _Peer:
    __slots__ = ("sock", "buf", "outbox", "node", "hcas", "dial")

    def __init__(self, sock: socket.socket, dial: tuple[str, int] | None):
        self.sock, self.buf, self.outbox = sock, wire.FrameBuffer(), bytearray()
        self.node, self.hcas, self.dial = "", (), dial


class Relay:
    def __init__(self, listen: tuple[str, int], peers: list[tuple[str, int]], log):
        self.listen, self.peers, self.log = listen, list(peers), log
        self._server = None
        self._sel = selectors.DefaultSelector()
        self._conns: dict[int, _Peer] = {}
        self._pending: dict[int, tuple] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()          # the peers' table, read by directory()
        self._stop = threading.Event()
        self._calls = CallQueue()
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None
        self._next_dial = 0.0

    # --- called from other threads ------------------------------------------------------
    def start(self, server) -> None:
        self._server = server
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(self.listen)
        self._listener.listen(16)
        self._listener.setblocking(False)
        self._thread = threading.Thread(target=self._loop, name="mock-ib-relay", daemon=True)
        self._thread.start()
        self.log.info("mock-ib relay listening", addr=f"{self.listen[0]}:{self.listen[1]}",
                      peers=",".join(f"{h}:{p}" for h, p in self.peers))

    def stop(self) -> None:
        self._stop.set()
        self._call(lambda: None)
        if self._thread is not None:
            self._thread.join(5)

    def directory(self) -> tuple[ibm.Hca, ...]:
        with self._lock:
            return tuple(h for p in self._conns.values() for h in p.hcas)

    def announce(self, fabric: Fabric) -> None:
        self._call(lambda: [self._queue(p, hello(fabric)) for p in list(self._conns.values())])

    def forward(self, dlid: int, slid: int, mad_bytes: bytes, done) -> None:
        """Send to the peer owning ``dlid``; ``done(status, slid, mad)`` gets its answer."""
        self._call(lambda: self._forward(dlid, slid, mad_bytes, done))

    def _call(self, thunk) -> None:
        self._calls.call_soon(thunk)

    # --- the relay's own thread -------------------------------------------------------------
    def _loop(self) -> None:
        self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        self._sel.register(self._calls, selectors.EVENT_READ, "wake")
        try:
            while not self._stop.is_set():
                self._redial()
                for key, events in self._sel.select(REDIAL_S):
                    if key.data == "listen":
                        self._accept()
                    elif key.data == "wake":
                        self._calls.run_pending()
                    else:
                        self._service(key.data, events)
        finally:
            for peer in list(self._conns.values()):
                self._drop(peer)
            self._sel.close()
            self._listener.close()
            self._calls.close()

    def _redial(self) -> None:
        now = time.monotonic()
        if now < self._next_dial:
            return
        self._next_dial = now + REDIAL_S
        dialled = {p.dial for p in self._conns.values() if p.dial}
        for addr in self.peers:
            if addr in dialled or addr == self.listen:
                continue
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.settimeout(1.0)
            try:
                sock.bind((self.listen[0], 0))        # leave from our own loopback address
                sock.connect(addr)
            except OSError:
                sock.close()
                continue
            self._adopt(sock, addr)

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except OSError:
            return
        self._adopt(sock, None)

    def _adopt(self, sock: socket.socket, dial) -> None:
        sock.setblocking(False)
        peer = _Peer(sock, dial)
        with self._lock:
            self._conns[sock.fileno()] = peer
        self._sel.register(sock, selectors.EVENT_READ, peer)
        self._queue(peer, hello(self._server.fabric))

    def _service(self, peer: _Peer, events: int) -> None:
        if events & selectors.EVENT_READ:
            try:
                data = peer.sock.recv(65536)
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":
                self._drop(peer)
                return
            if data:
                peer.buf.receive(data)
                try:
                    while (item := peer.buf.next_frame()) is not None:
                        self._handle(peer, *item)
                except (wire.WireError, struct.error) as exc:
                    self.log.warning("dropping a relay peer that broke the protocol",
                                     node=peer.node, error=str(exc))
                    self._drop(peer)
                    return
        self._flush(peer)

    def _handle(self, peer: _Peer, kind: int, payload: bytes) -> None:
        if kind == HELLO:
            node, hcas = parse_hello(payload)
            with self._lock:
                peer.node, peer.hcas = node, hcas
            self.log.info("relay peer announced", node=node, hcas=len(hcas))
        elif kind == FORWARD:
            req, dlid, _slid = _FORWARD.unpack_from(payload)
            status, slid, mad = answer_forward(self._server.fabric, dlid, payload[_FORWARD.size:])
            self._queue(peer, wire.frame(ANSWER, _ANSWER.pack(req, status, slid) + mad))
        elif kind == ANSWER:
            req, status, slid = _ANSWER.unpack_from(payload)
            done = self._pending.pop(req, None)
            if done is not None:
                done(status, slid, payload[_ANSWER.size:])
        else:
            raise wire.WireError(f"unknown relay frame type 0x{kind:02x}")

    def _forward(self, dlid: int, slid: int, mad_bytes: bytes, done) -> None:
        peer = next((p for p in self._conns.values() if any(h.lid == dlid for h in p.hcas)), None)
        if peer is None:
            done(errno.ETIMEDOUT, 0, mad_bytes)
            return
        req = next(self._ids) & 0xFFFFFFFF
        self._pending[req] = done
        self._queue(peer, wire.frame(FORWARD, _FORWARD.pack(req, dlid, slid) + mad_bytes))

    def _queue(self, peer: _Peer, data: bytes) -> None:
        peer.outbox += data
        self._flush(peer)

    def _flush(self, peer: _Peer) -> None:
        if peer.sock.fileno() < 0:
            return
        if peer.outbox:
            try:
                del peer.outbox[:peer.sock.send(peer.outbox)]
            except BlockingIOError:
                pass
            except OSError:
                self._drop(peer)
                return
        if len(peer.outbox) > MAX_OUTBOX:
            self._drop(peer)
            return
        try:
            self._sel.modify(peer.sock, selectors.EVENT_READ
                             | (selectors.EVENT_WRITE if peer.outbox else 0), peer)
        except (KeyError, ValueError):
            pass

    def _drop(self, peer: _Peer) -> None:
        with self._lock:
            self._conns.pop(peer.sock.fileno(), None)
        try:
            self._sel.unregister(peer.sock)
        except (KeyError, ValueError):
            pass
        peer.sock.close()
