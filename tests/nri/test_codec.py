"""The NRI codec on bytes alone, h11-style: one table of (message, bytes)
checked in both directions; every decode fed whole, byte by byte and with
trailing bytes that must stay buffered."""

from __future__ import annotations

import pytest

from mokka.nri.codec import mux, ttrpc
from mokka.nri.codec.conn import Connection
from mokka.nri.codec.mux import NEED_DATA, FrameReader, ProtocolError
from mokka.nri.codec.ttrpc import MessageReader, RequestReceived, Rejected, ResponseReceived
from mokka.nri.plugin import PLUGIN_SERVICE, RUNTIME_SERVICE


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


MIB = 1024 * 1024
#: The limits, spelled out here rather than read from the codec: Go ttrpc's
#: messageLengthLimit (4 MiB) and the multiplexer's frame payload (16 MiB).
TTRPC_LIMIT = 4 * MIB
FRAME_LIMIT = 16 * MIB


# Hand-encoded oracles: frame header (conn, length) + ttrpc header (length,
# stream, type, flags) + protobuf envelope, spelled out field by field.
REGISTER_PAYLOAD = h("0a05") + b"mokka" + h("1202") + b"10"      # plugin_name, plugin_idx
REGISTER_ENVELOPE = (h("0a1c") + RUNTIME_SERVICE.encode() + h("120e") + b"RegisterPlugin"
                     + h("1a0b") + REGISTER_PAYLOAD)
CASES = [
    ("RegisterPlugin request, conn 2 stream 1",
     RequestReceived(2, 1, RUNTIME_SERVICE, "RegisterPlugin", REGISTER_PAYLOAD),
     h("00000002 00000045") + h("0000003b 00000001 01 00") + REGISTER_ENVELOPE),
    ("empty OK response is a header-only message",
     ResponseReceived(2, 1),
     h("00000002 0000000a") + h("00000000 00000001 02 00")),
    ("Configure response carries events = 8 in field 2",
     ResponseReceived(1, 1, payload=h("1008")),
     h("00000001 0000000e") + h("00000004 00000001 02 00") + h("12021008")),
    ("Unimplemented status, no payload",
     ResponseReceived(1, 5, code=12, message="method Foo"),
     h("00000001 0000001a") + h("00000010 00000005 02 00")
     + h("0a0e 080c 120a") + b"method Foo"),
    ("request with a deadline, conn 1 stream 3",
     RequestReceived(1, 3, PLUGIN_SERVICE, "Shutdown", b"", 2_000_000_000),
     h("00000001 00000037") + h("0000002d 00000003 01 00")
     + h("0a1b") + PLUGIN_SERVICE.encode() + h("1208") + b"Shutdown"
     + h("20 80a8d6b907")),                   # field 4 varint 2_000_000_000
]
IDS = [c[0] for c in CASES]


def encode(event) -> bytes:
    if isinstance(event, RequestReceived):
        return Connection.request_bytes(event.conn_id, event.stream_id, event.service,
                                        event.method, event.payload, event.timeout_nano)
    return Connection.response_bytes(event.conn_id, event.stream_id, event.payload,
                                     event.code, event.message)


def feed(data: bytes, chunk: int | None) -> list:
    conn = Connection()
    out = []
    for i in range(0, len(data), chunk or max(len(data), 1)):
        conn.receive_data(data[i:i + (chunk or len(data))])
        out += conn.events()
    return out


@pytest.mark.parametrize("name,event,wire", CASES, ids=IDS)
def test_encodes_to_the_oracle_bytes(name, event, wire):
    assert encode(event) == wire


@pytest.mark.parametrize("chunk", [None, 1, 3], ids=["whole", "byte by byte", "3 bytes"])
@pytest.mark.parametrize("name,event,wire", CASES, ids=IDS)
def test_decodes_the_oracle_bytes(name, event, wire, chunk):
    assert feed(wire, chunk) == [event]


@pytest.mark.parametrize("name,event,wire", CASES, ids=IDS)
def test_trailing_bytes_stay_buffered(name, event, wire):
    trailing = wire[:5]                       # the start of the next frame header
    frames = FrameReader()
    frames.receive_data(wire + trailing)
    frame = frames.next_frame()
    assert frame == mux.Frame(event.conn_id, wire[8:])
    assert frames.next_frame() is NEED_DATA
    assert frames.trailing_data == trailing

    reader = MessageReader(event.conn_id)
    reader.receive_data(wire[8:] + wire[8:15])
    assert reader.next_event() == event
    assert reader.next_event() is NEED_DATA
    assert reader.trailing_data == wire[8:15]


def test_a_12kb_message_is_split_into_4096_byte_frames_and_rejoined():
    payload = bytes(range(256)) * 48           # 12288 bytes
    wire = Connection.request_bytes(1, 7, PLUGIN_SERVICE, "CreateContainer", payload)
    frames = FrameReader()
    frames.receive_data(wire)
    sizes = []
    while (frame := frames.next_frame()) is not NEED_DATA:
        assert frame.conn_id == 1
        sizes.append(len(frame.payload))
    assert sizes[:-1] == [4096] * (len(sizes) - 1) and 0 < sizes[-1] <= 4096
    assert feed(wire, None) == feed(wire, 1) == [
        RequestReceived(1, 7, PLUGIN_SERVICE, "CreateContainer", payload)]


def test_the_go_runtime_split_4096_then_the_rest_in_one_frame_is_read():
    payload = b"x" * 11_000
    message = ttrpc.encode_request(1, PLUGIN_SERVICE, "CreateContainer", payload)
    wire = mux.encode_frame(1, message[:4096]) + mux.encode_frame(1, message[4096:])
    assert feed(wire, None)[0].payload == payload


@pytest.mark.parametrize("cut", [0, 5, 10, 4000, 4106])
def test_frames_cut_anywhere_against_message_boundaries_read_the_same(cut):
    # Whole messages in whole frames take one step; any other cut (two
    # messages in one frame, a frame ending inside a header) the general one.
    first = ttrpc.encode_request(1, PLUGIN_SERVICE, "CreateContainer", b"a" * 9000)
    second = ttrpc.encode_request(3, PLUGIN_SERVICE, "CreateContainer", b"b" * 100)
    stream = first + second
    cut = cut or len(first)
    wire = mux.encode_frames(1, stream[:cut]) + mux.encode_frames(1, stream[cut:])
    expected = [RequestReceived(1, 1, PLUGIN_SERVICE, "CreateContainer", b"a" * 9000),
                RequestReceived(1, 3, PLUGIN_SERVICE, "CreateContainer", b"b" * 100)]
    assert feed(wire, None) == feed(wire, 1) == feed(wire, 4099) == expected


@pytest.mark.parametrize("size,frames", [(4096, 1), (4097, 2), (8192, 2), (8193, 3)])
def test_writer_frames_hold_at_most_4096_bytes(size, frames):
    wire = mux.encode_frames(1, b"m" * size)
    reader = FrameReader()
    reader.receive_data(wire)
    got = []
    while (frame := reader.next_frame()) is not NEED_DATA:
        got.append(frame)
    assert len(got) == frames and all(len(f.payload) <= 4096 for f in got)
    assert b"".join(f.payload for f in got) == b"m" * size


def test_interleaved_frames_of_both_connections_reassemble_per_connection():
    a = Connection.request_bytes(1, 1, PLUGIN_SERVICE, "CreateContainer", b"a" * 9000)
    b = Connection.request_bytes(2, 1, RUNTIME_SERVICE, "RegisterPlugin", b"b" * 5000)

    def split(wire):
        out, reader = [], FrameReader()
        reader.receive_data(wire)
        while (f := reader.next_frame()) is not NEED_DATA:
            out.append(mux.encode_frame(f.conn_id, f.payload))
        return out

    fa, fb = split(a), split(b)
    assert len(fa) == 3 and len(fb) == 2
    wire = fa[0] + fb[0] + fa[1] + fb[1] + fa[2]
    events = feed(wire, 7)
    assert [(e.conn_id, len(e.payload)) for e in events] == [(2, 5000), (1, 9000)]


def test_frames_for_unknown_connections_are_discarded():
    wire = mux.encode_frame(0, b"junk") + mux.encode_frame(9, b"more") + CASES[1][2]
    assert feed(wire, None) == [CASES[1][1]]


def test_a_frame_of_exactly_16_mib_is_accepted():
    reader = FrameReader()
    reader.receive_data(h("00000001 01000000"))               # length 16 MiB, on the limit
    assert reader.next_frame() is NEED_DATA
    reader.receive_data(b"\x5a" * FRAME_LIMIT)
    frame = reader.next_frame()
    assert frame.conn_id == 1 and len(frame.payload) == FRAME_LIMIT


def test_a_frame_over_16_mib_is_a_protocol_error_and_stays_one():
    reader = FrameReader()
    reader.receive_data(h("00000001 01000001"))               # length 16 MiB + 1
    for _ in range(2):
        with pytest.raises(ProtocolError):
            reader.next_frame()


def test_an_oversized_request_is_answered_resource_exhausted_and_skipped():
    big = h("00400001 00000001 01 00")                    # length 4 MiB + 1, stream 1, request
    body = b"\0" * (TTRPC_LIMIT + 1)
    after = ttrpc.encode_request(3, PLUGIN_SERVICE, "Shutdown")
    reader = MessageReader(1)
    reader.receive_data(big)
    event = reader.next_event()
    assert isinstance(event, Rejected) and event.code == ttrpc.RESOURCE_EXHAUSTED
    assert event.stream_id == 1
    for i in range(0, len(body), 1 << 20):     # the discarded bytes are never buffered
        reader.receive_data(body[i:i + (1 << 20)])
        assert reader.next_event() is NEED_DATA
        assert len(reader.trailing_data) == 0
    reader.receive_data(after)
    assert reader.next_event() == RequestReceived(1, 3, PLUGIN_SERVICE, "Shutdown", b"")


@pytest.mark.parametrize("ids,rejected", [
    ((2,), [2]),
    ((1, 1), [1]),
    ((3, 1), [1]),
    ((1, 3, 5), []),
], ids=["even id", "repeated id", "decreasing id", "odd increasing ids are fine"])
def test_request_stream_ids_must_be_odd_and_increasing(ids, rejected):
    reader = MessageReader(1)
    for sid in ids:
        reader.receive_data(ttrpc.encode_request(sid, PLUGIN_SERVICE, "Shutdown"))
    events = []
    while (e := reader.next_event()) is not NEED_DATA:
        events.append(e)
    assert [e.stream_id for e in events if isinstance(e, Rejected)] == rejected
    assert all(e.code == ttrpc.INVALID_ARGUMENT for e in events if isinstance(e, Rejected))


def test_a_garbage_request_envelope_is_rejected_invalid_argument():
    reader = MessageReader(1)
    reader.receive_data(ttrpc.encode_message(1, ttrpc.TYPE_REQUEST, b"\xff\xff\xff"))
    event = reader.next_event()
    assert isinstance(event, Rejected) and event.code == ttrpc.INVALID_ARGUMENT


def test_data_messages_are_ignored():
    reader = MessageReader(1)
    reader.receive_data(ttrpc.encode_message(1, ttrpc.TYPE_DATA, b"x")
                        + ttrpc.encode_request(1, PLUGIN_SERVICE, "Shutdown"))
    assert isinstance(reader.next_event(), RequestReceived)


def test_a_message_of_exactly_4_mib_is_accepted():
    # A Response envelope of exactly 4 MiB: field 2 (payload), a 4-byte varint
    # length (4 MiB - 5), then the payload bytes.
    payload = b"\x5a" * (TTRPC_LIMIT - 5)
    envelope = h("12") + h("fbffff01") + payload
    assert len(envelope) == TTRPC_LIMIT
    reader = MessageReader(1)
    reader.receive_data(h("00400000 00000001 02 00") + envelope)
    assert reader.next_event() == ResponseReceived(1, 1, payload=payload)


def test_the_writer_takes_4_mib_and_refuses_a_byte_more():
    wire = ttrpc.encode_message(1, ttrpc.TYPE_RESPONSE, b"\0" * TTRPC_LIMIT)
    assert wire[:10] == h("00400000 00000001 02 00") and len(wire) == 10 + TTRPC_LIMIT
    with pytest.raises(ProtocolError):
        ttrpc.encode_message(1, ttrpc.TYPE_RESPONSE, b"\0" * (TTRPC_LIMIT + 1))


def test_header_round_trip():
    header = ttrpc.Header(5, 7, ttrpc.TYPE_RESPONSE, 0)
    assert ttrpc.decode_header(ttrpc.encode_header(header)) == header
    with pytest.raises(ProtocolError):
        ttrpc.decode_header(b"short")


def test_a_long_frame_is_handed_on_in_pieces_as_it_arrives():
    reader = FrameReader()
    reader.receive_data(h("00000001 00500000"))                # one 5 MiB frame
    assert reader.next_frame() is NEED_DATA
    pieces = []
    for _ in range(5):
        reader.receive_data(b"\x5a" * MIB)
        pieces.append(reader.next_frame())
        assert reader.trailing_data == b""                      # nothing held back
        assert reader.next_frame() is NEED_DATA
    assert [(f.conn_id, len(f.payload)) for f in pieces] == [(1, MIB)] * 5
    reader.receive_data(CASES[1][2])
    assert reader.next_frame() == mux.Frame(2, CASES[1][2][8:])


def test_a_5_mb_request_in_one_frame_is_dropped_as_it_streams_and_the_next_one_read():
    conn = Connection()
    body = b"\0" * (5 * 10**6)
    message = h("004c4b40 00000001 01 00") + body                # claims 5_000_000 bytes
    after = Connection.request_bytes(1, 3, PLUGIN_SERVICE, "Shutdown")
    conn.receive_data(mux.FRAME_HEADER.pack(1, len(message)) + message[:MIB])
    events = conn.events()
    assert events == [Rejected(1, 1, ttrpc.RESOURCE_EXHAUSTED,
                               "message length 5000000 exceeds maximum message size 4194304")]
    for i in range(MIB, len(message), MIB):
        conn.receive_data(message[i:i + MIB])
        assert conn.events() == []
    conn.receive_data(after)
    assert conn.events() == [RequestReceived(1, 3, PLUGIN_SERVICE, "Shutdown", b"")]


@pytest.mark.parametrize("length", [16 * MIB + 1, 2**32 - 1], ids=["16 MiB + 1", "4 GiB"])
def test_a_header_claiming_more_than_anyone_sends_is_a_protocol_error_not_a_drain(length):
    conn = Connection()
    conn.receive_data(mux.encode_frame(1, ttrpc.encode_header(
        ttrpc.Header(length, 1, ttrpc.TYPE_REQUEST))))
    for _ in range(2):                        # and stays one: close the socket
        with pytest.raises(ProtocolError, match=f"claims {length} bytes"):
            conn.events()


def test_a_message_of_an_unknown_type_is_skipped_unbuffered():
    reader = MessageReader(1)
    reader.receive_data(h("00100000 00000001 07 00") + b"\0" * 100)   # type 7, 1 MiB
    assert reader.next_event() is NEED_DATA and reader.trailing_data == b""
    reader.receive_data(b"\0" * (MIB - 100) + ttrpc.encode_request(1, PLUGIN_SERVICE, "Shutdown"))
    assert reader.next_event() == RequestReceived(1, 1, PLUGIN_SERVICE, "Shutdown", b"")


@pytest.mark.parametrize("size", [0, 1, 127, 128, 300, 16383, 16384, 130_000])
def test_a_success_reply_is_the_bytes_protobuf_writes(size):
    # Written by hand on the hot path: it must be exactly protobuf's envelope,
    # one- to three-byte varint lengths included.
    from mokka.nri.proto import ttrpc_pb2
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    envelope = ttrpc_pb2.Response(payload=payload).SerializeToString()
    assert ttrpc.encode_response(7, payload) == h("%08x 00000007 02 00" % len(envelope)) + envelope
