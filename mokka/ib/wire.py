"""The frames libibmockumad and mock-ib exchange on run/mock-ib.sock (sans-I/O).

A frame is a 4-byte big-endian length (of what follows), a 1-byte type and the
payload. ``FrameBuffer`` only appends bytes and hands out whole frames; a length
above ``MAX_FRAME`` or below one byte is a ``WireError`` (the driver then
closes the connection), so the buffer never grows without bound.

One connection is one umad port: the shim sends OPEN first and reads OPENED;
after that it sends REGISTER, UNREGISTER and SEND without waiting, and reads
only RECV frames (a MAD for one of its agents). Queries (PORT, CA, CAS) go on
a short connection of their own: one request, one answer. The C side
(native/ib/) writes the same layouts by hand; tests/ib pins both on bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mokka.core import names

MAX_FRAME = names.IB_WIRE_MAX_FRAME
NAME_LEN = 20                     # UMAD_CA_NAME_LEN
ADDR_SIZE = 44                    # struct ib_mad_addr
METHOD_MASK_SIZE = 16

OPEN, REGISTER, UNREGISTER, SEND = (names.IB_WIRE_OPEN, names.IB_WIRE_REGISTER,
                                    names.IB_WIRE_UNREGISTER, names.IB_WIRE_SEND)
QUERY_PORT, QUERY_CA, QUERY_CAS = names.IB_WIRE_QUERY_PORT, names.IB_WIRE_QUERY_CA, names.IB_WIRE_QUERY_CAS
OPENED, RECV, PORT, CA, CAS = (names.IB_WIRE_OPENED, names.IB_WIRE_RECV, names.IB_WIRE_PORT,
                               names.IB_WIRE_CA, names.IB_WIRE_CAS)

_LEN = struct.Struct(">I")


class WireError(ValueError):
    """A frame the peer should never have sent; the connection closes."""


def _name(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


def _pad(text: str, size: int) -> bytes:
    return text.encode("ascii", "replace")[:size - 1].ljust(size, b"\0")


def frame(kind: int, payload: bytes = b"") -> bytes:
    return _LEN.pack(len(payload) + 1) + bytes([kind]) + payload


class FrameBuffer:
    """Bytes in, (type, payload) out; ``next_frame`` returns None until one is whole."""

    def __init__(self) -> None:
        self._data = bytearray()

    def receive(self, data: bytes) -> None:
        self._data += data

    def next_frame(self) -> tuple[int, bytes] | None:
        if len(self._data) < 4:
            return None
        (length,) = _LEN.unpack_from(self._data)
        if length < 1 or length > MAX_FRAME:
            raise WireError(f"frame length {length} outside 1..{MAX_FRAME}")
        if len(self._data) < 4 + length:
            return None
        kind = self._data[4]
        payload = bytes(self._data[5:4 + length])
        del self._data[:4 + length]
        return kind, payload

    @property
    def pending(self) -> int:
        return len(self._data)


# --- messages -------------------------------------------------------------------

@dataclass(frozen=True)
class Open:
    ca_name: str
    port: int


@dataclass(frozen=True)
class Register:
    agent_id: int
    mgmt_class: int
    class_version: int
    rmpp_version: int
    oui: int
    method_mask: bytes


@dataclass(frozen=True)
class Unregister:
    agent_id: int


@dataclass(frozen=True)
class Send:
    agent_id: int
    timeout_ms: int
    retries: int
    addr: bytes
    mad: bytes

    @property
    def dlid(self) -> int:
        return struct.unpack_from(">H", self.addr, 8)[0]


@dataclass(frozen=True)
class Query:
    kind: int
    ca_name: str = ""
    port: int = 0


_OPEN = struct.Struct(f">{NAME_LEN}sI")
_REGISTER = struct.Struct(f">IBBBxI{METHOD_MASK_SIZE}s")
_SEND = struct.Struct(f">III{ADDR_SIZE}s")
_RECV = struct.Struct(f">Ii{ADDR_SIZE}s")


def parse_request(kind: int, payload: bytes):
    """A client frame as a message; WireError for an unknown type or a short payload."""
    try:
        if kind == OPEN:
            name, port = _OPEN.unpack_from(payload)
            return Open(_name(name), port)
        if kind == REGISTER:
            agent, mclass, version, rmpp, oui, mask = _REGISTER.unpack_from(payload)
            return Register(agent, mclass, version, rmpp, oui & 0xFFFFFF, mask)
        if kind == UNREGISTER:
            return Unregister(struct.unpack_from(">I", payload)[0])
        if kind == SEND:
            agent, timeout, retries, addr = _SEND.unpack_from(payload)
            return Send(agent, timeout, retries, addr, payload[_SEND.size:])
        if kind in (QUERY_PORT, QUERY_CA):
            name, port = _OPEN.unpack_from(payload)
            return Query(kind, _name(name), port)
        if kind == QUERY_CAS:
            return Query(kind)
    except struct.error:
        raise WireError(f"frame type 0x{kind:02x}: payload of {len(payload)} bytes is short") from None
    raise WireError(f"unknown frame type 0x{kind:02x}")


# --- encoders (both directions; the tests use the client side) --------------------

def open_request(ca_name: str, port: int) -> bytes:
    return frame(OPEN, _OPEN.pack(_pad(ca_name, NAME_LEN), port))


def register_request(agent_id: int, mgmt_class: int, class_version: int = 1, rmpp: int = 0,
                     oui: int = 0, method_mask: bytes = bytes(METHOD_MASK_SIZE)) -> bytes:
    return frame(REGISTER, _REGISTER.pack(agent_id, mgmt_class, class_version, rmpp, oui,
                                          method_mask))


def unregister_request(agent_id: int) -> bytes:
    return frame(UNREGISTER, struct.pack(">I", agent_id))


def send_request(agent_id: int, addr: bytes, mad: bytes, timeout_ms: int = 0,
                 retries: int = 0) -> bytes:
    return frame(SEND, _SEND.pack(agent_id, timeout_ms, retries, addr) + mad)


def query_request(kind: int, ca_name: str = "", port: int = 0) -> bytes:
    if kind == QUERY_CAS:
        return frame(kind)
    return frame(kind, _OPEN.pack(_pad(ca_name, NAME_LEN), port))


def opened(status: int, ca_name: str = "", port: int = 0) -> bytes:
    return frame(OPENED, struct.pack(f">i{NAME_LEN}sI", status, _pad(ca_name, NAME_LEN), port))


def recv(agent_id: int, status: int, addr: bytes, mad: bytes) -> bytes:
    return frame(RECV, _RECV.pack(agent_id, status, addr) + mad)


def parse_recv(payload: bytes) -> tuple[int, int, bytes, bytes]:
    agent, status, addr = _RECV.unpack_from(payload)
    return agent, status, addr, payload[_RECV.size:]


def mad_addr(*, lid: int, qpn: int, qkey: int = 0, sl: int = 0, gid: bytes | None = None,
             pkey_index: int = 0) -> bytes:
    """struct ib_mad_addr: qpn, qkey, lid in network order; the GRH only with a gid."""
    head = struct.pack(">IIHBBBBBB", qpn, qkey, lid, sl, 0, 1 if gid else 0, 0, 64 if gid else 0, 0)
    return head + (gid or bytes(16)).ljust(16, b"\0")[:16] + struct.pack(">I", 0) \
        + struct.pack("<H", pkey_index) + bytes(6)


# PORT answer: status, name, port, base_lid, lmc, sm_lid, sm_sl, state, phys_state,
# rate, capmask, gid_prefix, port_guid, link_layer.
_PORT = struct.Struct(f">i{NAME_LEN}sIIIIIIIIIQQ{NAME_LEN}s")
# CA answer: status, name, node_type, numports, fw_ver, ca_type, hw_ver, node_guid, system_guid.
_CA = struct.Struct(f">i{NAME_LEN}sII20s40s20sQQ")


def port_answer(status: int, *, ca_name: str = "", port: int = 0, base_lid: int = 0,
                lmc: int = 0, sm_lid: int = 0, sm_sl: int = 0, state: int = 0,
                phys_state: int = 0, rate: int = 0, capmask: int = 0, gid_prefix: int = 0,
                port_guid: int = 0, link_layer: str = "") -> bytes:
    return frame(PORT, _PORT.pack(status, _pad(ca_name, NAME_LEN), port, base_lid, lmc, sm_lid,
                                  sm_sl, state, phys_state, rate, capmask, gid_prefix,
                                  port_guid, _pad(link_layer, NAME_LEN)))


def ca_answer(status: int, *, ca_name: str = "", node_type: int = 0, numports: int = 0,
              fw_ver: str = "", ca_type: str = "", hw_ver: str = "", node_guid: int = 0,
              system_guid: int = 0) -> bytes:
    return frame(CA, _CA.pack(status, _pad(ca_name, NAME_LEN), node_type, numports,
                              _pad(fw_ver, 20), _pad(ca_type, 40), _pad(hw_ver, 20),
                              node_guid, system_guid))


def cas_answer(names: list[str]) -> bytes:
    return frame(CAS, struct.pack(">I", len(names)) + b"".join(_pad(n, NAME_LEN) for n in names))
