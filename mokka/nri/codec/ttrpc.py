"""ttrpc on one logical connection, sans I/O: bytes <-> request/response events.

A ttrpc message is a 10-byte header (payload length uint32, stream id uint32,
type byte, flags byte; big-endian) and a protobuf envelope (``ttrpc.Request``
or ``ttrpc.Response``). NRI uses unary calls only: types 1 and 2, flags 0.

``MessageReader`` reassembles one connection's byte stream (fed frame
payloads in order) and returns frozen events; the ``encode_*`` functions build
whole messages for ``mux.encode_frames``. This module is the one home of the
ttrpc constants and status codes.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from google.protobuf.message import DecodeError

from mokka.nri.codec.mux import NEED_DATA, NeedData, ProtocolError, ReceiveBuffer, pending
from mokka.nri.proto import ttrpc_pb2

HEADER = struct.Struct(">IIBB")
HEADER_SIZE = HEADER.size                 # 10

TYPE_REQUEST = 1
TYPE_RESPONSE = 2
TYPE_DATA = 3                             # streaming only; NRI never sends it

#: A receiver discards a longer message and answers ResourceExhausted.
MAX_PAYLOAD = 4 << 20
#: A header claiming more than this is not a message anyone sent (Go ttrpc
#: refuses to send over MAX_PAYLOAD; this is the multiplexer's frame limit):
#: the stream is corrupt, and draining what it claims (up to 4 GiB) would
#: swallow every message after it. Close instead.
MAX_DISCARD = 16 << 20

# gRPC status codes the plugin sends or reads.
OK = 0
UNKNOWN = 2
INVALID_ARGUMENT = 3
RESOURCE_EXHAUSTED = 8
UNIMPLEMENTED = 12
INTERNAL = 13


class Header(NamedTuple):
    length: int
    stream_id: int
    type: int
    flags: int = 0


def encode_header(header: Header) -> bytes:
    return HEADER.pack(header.length, header.stream_id, header.type, header.flags)


def decode_header(data: bytes) -> Header:
    if len(data) != HEADER_SIZE:
        raise ProtocolError(f"ttrpc header needs {HEADER_SIZE} bytes, got {len(data)}")
    return Header._make(HEADER.unpack(data))


# --- Events ------------------------------------------------------------------

# Events are NamedTuples: immutable values, and one is built for every message
# (a frozen dataclass costs ~3x more to build).

class RequestReceived(NamedTuple):
    conn_id: int
    stream_id: int
    service: str
    method: str
    payload: bytes
    timeout_nano: int = 0


class ResponseReceived(NamedTuple):
    conn_id: int
    stream_id: int
    payload: bytes = b""
    code: int = OK
    message: str = ""


class Rejected(NamedTuple):
    """A request the reader refused: answer ``stream_id`` with this status."""
    conn_id: int
    stream_id: int
    code: int
    message: str


Event = RequestReceived | ResponseReceived | Rejected


# --- Encoding ------------------------------------------------------------------

def encode_message(stream_id: int, msg_type: int, payload: bytes) -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"ttrpc payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    return HEADER.pack(len(payload), stream_id, msg_type, 0) + payload


def encode_request(stream_id: int, service: str, method: str, payload: bytes = b"",
                   timeout_nano: int = 0) -> bytes:
    req = ttrpc_pb2.Request(service=service, method=method, payload=payload,
                            timeout_nano=timeout_nano)
    return encode_message(stream_id, TYPE_REQUEST, req.SerializeToString())


#: ttrpc.Response.payload: field 2, length-delimited.
_RESPONSE_PAYLOAD_TAG = b"\x12"


def encode_varint(n: int) -> bytes:
    """A protobuf base-128 varint (n >= 0)."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_response(stream_id: int, payload: bytes = b"", code: int = OK,
                    message: str = "") -> bytes:
    # Like the Go server: status left out on success, so an empty result is a
    # zero-length envelope. Success (every CreateContainer reply) is written
    # by hand, the payload field alone, without building a message to copy
    # the payload into.
    if code == OK:
        envelope = _RESPONSE_PAYLOAD_TAG + encode_varint(len(payload)) + payload if payload else b""
        return encode_message(stream_id, TYPE_RESPONSE, envelope)
    resp = ttrpc_pb2.Response(payload=payload)
    resp.status.code = code
    resp.status.message = message
    return encode_message(stream_id, TYPE_RESPONSE, resp.SerializeToString())


def _decode_envelope(cls, data: bytes):
    try:
        return cls.FromString(data), ""
    except (DecodeError, ValueError) as exc:   # upb raises DecodeError; be lenient
        return None, str(exc) or type(exc).__name__


# --- Reading -------------------------------------------------------------------

class MessageReader:
    """One logical connection's bytes in, events out.

    Enforces the server-side stream rule (requests carry odd ids, strictly
    increasing) and the payload limit without buffering what it discards: a
    message over ``max_payload`` is skipped as it arrives (and a request
    answered with a ``Rejected``); a header claiming over ``max_discard`` is a
    ``ProtocolError`` (close the socket), not something to drain.
    """

    def __init__(self, conn_id: int, max_payload: int = MAX_PAYLOAD,
                 max_discard: int = MAX_DISCARD) -> None:
        self.conn_id = conn_id
        self._buf = ReceiveBuffer()
        self._max = max_payload
        self._max_discard = max(max_discard, max_payload)
        self._skip = 0                 # bytes of an oversized message still to drop
        self._last_request_id = 0

    def receive_data(self, data: bytes) -> None:
        self._buf.append(data)

    @property
    def trailing_data(self) -> bytes:
        return bytes(self._buf)

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def buffer(self) -> ReceiveBuffer:
        return self._buf

    def next_event(self) -> Event | NeedData:
        buf = self._buf
        while True:
            if self._skip:
                self._skip -= len(buf.take_up_to(self._skip))
                if self._skip:
                    return NEED_DATA
            fields = buf.unpack(HEADER, consume=False)
            if fields is None:
                return NEED_DATA
            length, msg_type = fields[0], fields[2]
            if length > self._max_discard:
                raise ProtocolError(
                    f"ttrpc header on connection {self.conn_id} claims {length} bytes, "
                    f"more than the {self._max_discard} any sender would discard")
            if length > self._max or msg_type not in (TYPE_REQUEST, TYPE_RESPONSE):
                # Dropped as it streams past, never buffered.
                buf.unpack(HEADER)
                self._skip = length
                event = self._too_large(Header._make(fields))    # None for a type nobody answers
            else:
                if len(buf) < HEADER_SIZE + length:
                    return NEED_DATA
                buf.unpack(HEADER)
                event = self._decode(Header._make(fields), buf.take(length) or b"")
            if event is not None:
                return event

    def message_size(self, data: bytearray, offset: int, length: int) -> int | None:
        """The size of the whole message starting at ``data[offset:]`` (of
        which ``length`` bytes are there), or None if this reader is in the
        middle of one or the message is not one ``decode_whole`` takes."""
        if self._skip or pending(self._buf) or length < HEADER_SIZE:
            return None
        size, _, msg_type, _ = HEADER.unpack_from(data, offset)
        if size > self._max or msg_type not in (TYPE_REQUEST, TYPE_RESPONSE):
            return None
        return HEADER_SIZE + size

    def decode_whole(self, message: bytes) -> Event | None:
        """``next_event`` for exactly one whole message (``message_size`` said so)."""
        _, stream_id, msg_type, _ = HEADER.unpack_from(message)
        # A view: the envelope's fields are copied out by the parser anyway.
        if msg_type == TYPE_REQUEST:        # every CreateContainer: no Header built
            return self._check_stream(stream_id) or \
                self._request(stream_id, memoryview(message)[HEADER_SIZE:])
        return self._decode(Header._make(HEADER.unpack_from(message)),
                            memoryview(message)[HEADER_SIZE:])

    def _too_large(self, header: Header) -> Event | None:
        text = f"message length {header.length} exceeds maximum message size {self._max}"
        if header.type == TYPE_REQUEST:
            return self._check_stream(header.stream_id) or Rejected(
                self.conn_id, header.stream_id, RESOURCE_EXHAUSTED, text)
        if header.type == TYPE_RESPONSE:
            return ResponseReceived(self.conn_id, header.stream_id,
                                    code=RESOURCE_EXHAUSTED, message=text)
        return None

    def _check_stream(self, sid: int) -> Rejected | None:
        if sid % 2 == 0 or sid <= self._last_request_id:
            return Rejected(self.conn_id, sid, INVALID_ARGUMENT,
                            f"StreamID {sid} must be odd and greater than {self._last_request_id}")
        self._last_request_id = sid
        return None

    def _decode(self, header: Header, payload: bytes) -> Event | None:
        if header.type == TYPE_REQUEST:
            return self._check_stream(header.stream_id) or self._request(header.stream_id, payload)
        if header.type == TYPE_RESPONSE:
            resp, err = _decode_envelope(ttrpc_pb2.Response, payload)
            if resp is None:
                return ResponseReceived(self.conn_id, header.stream_id, code=INTERNAL,
                                        message=f"unmarshal response error: {err}")
            return ResponseReceived(self.conn_id, header.stream_id, resp.payload,
                                    resp.status.code, resp.status.message)
        return None

    def _request(self, stream_id: int, envelope: bytes) -> RequestReceived | Rejected:
        """A request whose stream id passed the rule, from its envelope."""
        req, err = _decode_envelope(ttrpc_pb2.Request, envelope)
        if req is None:
            return Rejected(self.conn_id, stream_id, INVALID_ARGUMENT,
                            f"unmarshal request error: {err}")
        return RequestReceived(self.conn_id, stream_id, req.service, req.method,
                               req.payload, req.timeout_nano)
