"""Management datagrams (MADs) as bytes <-> frozen dataclasses; no I/O, no policy.

Layouts follow the InfiniBand Architecture Specification, volume 1 (chapters
13-16): a 24-byte common header, then the class's own header and data. Every
MAD on the wire is 256 bytes; ``decode`` refuses anything shorter than the
common header and reports a class header it cannot hold as ``MadError``, so a
hostile datagram never raises anything else.

Only what mock-ib answers is modelled: the subnet management class (LID-routed
and directed route), subnet administration, and vendor range 2 (the OpenIB ping
class). Attribute payloads (NodeInfo, PortInfo, ...) have their own encoders in
``mokka.ib.attrs``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

MAD_SIZE = 256
HEADER_SIZE = 24

# Management classes.
CLASS_SMI = 0x01            # subnet management, LID-routed
CLASS_SA = 0x03             # subnet administration
CLASS_SMI_DIRECT = 0x81     # subnet management, directed route
CLASS_OPENIB_PING = 0x32    # libibmad's IB_VENDOR_OPENIB_PING_CLASS (range 2 + 2)
OPENIB_OUI = 0x001405

# Methods (the response bit 0x80 set on answers).
METHOD_GET = 0x01
METHOD_SET = 0x02
METHOD_GET_RESP = 0x81
METHOD_SEND = 0x03
METHOD_TRAP = 0x05
METHOD_REPORT = 0x06
METHOD_TRAP_REPRESS = 0x07
METHOD_GET_TABLE = 0x12
METHOD_GET_TABLE_RESP = 0x92
RESPONSE_BIT = 0x80

# Attribute ids.
ATTR_NODE_DESC = 0x0010
ATTR_NODE_INFO = 0x0011
ATTR_SWITCH_INFO = 0x0012
ATTR_PORT_INFO = 0x0015
ATTR_SM_INFO = 0x0020
ATTR_PATH_RECORD = 0x0035

# MAD status (common header bits 2-4: invalid field codes).
STATUS_OK = 0x0000
STATUS_BAD_VERSION = 0x0004
STATUS_METHOD_UNSUPPORTED = 0x0008
STATUS_METHOD_ATTR_UNSUPPORTED = 0x000C
STATUS_INVALID_ATTR_VALUE = 0x001C
STATUS_DIRECTION = 0x8000   # the D bit of a directed route SMP's status word
SA_STATUS_NO_RECORDS = 0x0300   # SA class-specific status: ERR_NO_RECORDS (3 << 8)

# Offsets of class payloads.
SMP_DATA_OFFSET = 64
SMP_DATA_SIZE = 64
SA_DATA_OFFSET = 56
SA_DATA_SIZE = 200
VENDOR2_DATA_OFFSET = 40
VENDOR2_DATA_SIZE = 216
DR_PATH_SIZE = 64
MAX_HOPS = 63

_HEADER = struct.Struct(">BBBBHHQHHI")   # base, class, version, method, status, spec, tid, attr, rsvd, mod


class MadError(ValueError):
    """A datagram that is not a MAD mock-ib can read; the message says why."""


@dataclass(frozen=True)
class Mad:
    """One MAD: the common header decoded, the rest of the 256 bytes kept as is."""
    mgmt_class: int
    method: int
    tid: int
    attr_id: int
    attr_mod: int = 0
    class_version: int = 1
    base_version: int = 1
    status: int = 0
    class_specific: int = 0
    body: bytes = bytes(MAD_SIZE - HEADER_SIZE)    # bytes 24..255

    @property
    def is_response(self) -> bool:
        return bool(self.method & RESPONSE_BIT)

    @property
    def is_directed(self) -> bool:
        return self.mgmt_class == CLASS_SMI_DIRECT

    def at(self, offset: int, size: int) -> bytes:
        """``size`` bytes at the MAD offset ``offset`` (>= 24)."""
        return self.body[offset - HEADER_SIZE: offset - HEADER_SIZE + size]

    def with_bytes(self, offset: int, data: bytes) -> "Mad":
        start = offset - HEADER_SIZE
        body = self.body[:start] + data + self.body[start + len(data):]
        return replace(self, body=body[:MAD_SIZE - HEADER_SIZE])


def decode(data: bytes) -> Mad:
    """One MAD from a datagram; short ones are padded to 256 bytes, longer ones cut."""
    if len(data) < HEADER_SIZE:
        raise MadError(f"MAD of {len(data)} bytes is shorter than its {HEADER_SIZE}-byte header")
    base, mclass, version, method, status, spec, tid, attr, _rsvd, mod = _HEADER.unpack_from(data)
    if base != 1:
        raise MadError(f"MAD base version {base} is not 1")
    body = bytes(data[HEADER_SIZE:MAD_SIZE]).ljust(MAD_SIZE - HEADER_SIZE, b"\0")
    return Mad(mgmt_class=mclass, method=method, tid=tid, attr_id=attr, attr_mod=mod,
               class_version=version, base_version=base, status=status,
               class_specific=spec, body=body)


def encode(mad: Mad) -> bytes:
    head = _HEADER.pack(mad.base_version, mad.mgmt_class, mad.class_version, mad.method,
                        mad.status, mad.class_specific, mad.tid, mad.attr_id, 0, mad.attr_mod)
    return head + mad.body.ljust(MAD_SIZE - HEADER_SIZE, b"\0")[:MAD_SIZE - HEADER_SIZE]


# --- class views ----------------------------------------------------------------

def smp_data(mad: Mad) -> bytes:
    return mad.at(SMP_DATA_OFFSET, SMP_DATA_SIZE)


@dataclass(frozen=True)
class DirectedRoute:
    """The directed route fields of a class 0x81 SMP."""
    hop_pointer: int
    hop_count: int
    dr_slid: int
    dr_dlid: int
    initial_path: bytes        # 64 bytes; entry i is the port to leave at hop i (entry 0 unused)
    return_path: bytes


def directed_route(mad: Mad) -> DirectedRoute:
    hop_pointer, hop_count = mad.class_specific >> 8, mad.class_specific & 0xFF
    if hop_count > MAX_HOPS:
        raise MadError(f"directed route hop count {hop_count} exceeds {MAX_HOPS}")
    dr_slid, dr_dlid = struct.unpack(">HH", mad.at(32, 4))
    return DirectedRoute(hop_pointer, hop_count, dr_slid, dr_dlid,
                         mad.at(128, DR_PATH_SIZE), mad.at(192, DR_PATH_SIZE))


def sa_component_mask(mad: Mad) -> int:
    return struct.unpack(">Q", mad.at(48, 8))[0]


def sa_data(mad: Mad) -> bytes:
    return mad.at(SA_DATA_OFFSET, SA_DATA_SIZE)


def vendor_oui(mad: Mad) -> int:
    return int.from_bytes(mad.at(37, 3), "big")


# --- answers ----------------------------------------------------------------------

def response(request: Mad, *, status: int = STATUS_OK, method: int | None = None) -> Mad:
    """The skeleton of the answer to ``request``: same class, TID and attribute."""
    method = request.method | RESPONSE_BIT if method is None else method
    spec = request.class_specific
    if request.is_directed:
        status |= STATUS_DIRECTION     # the answer travels the return path
    return replace(request, method=method, status=status, class_specific=spec)


def with_smp_data(mad: Mad, payload: bytes) -> Mad:
    return mad.with_bytes(SMP_DATA_OFFSET, payload[:SMP_DATA_SIZE].ljust(SMP_DATA_SIZE, b"\0"))


def with_sa_records(mad: Mad, records: list[bytes], record_size: int) -> Mad:
    """SA data holding ``records`` back to back; AttributeOffset in 8-byte words."""
    data = b"".join(records)[:SA_DATA_SIZE].ljust(SA_DATA_SIZE, b"\0")
    mad = mad.with_bytes(44, struct.pack(">H", record_size // 8))
    return mad.with_bytes(SA_DATA_OFFSET, data)


def with_vendor_data(mad: Mad, payload: bytes) -> Mad:
    return mad.with_bytes(VENDOR2_DATA_OFFSET,
                          payload[:VENDOR2_DATA_SIZE].ljust(VENDOR2_DATA_SIZE, b"\0"))
