"""What the codec decides at its edges: the one-step path for whole messages
(``FrameReader.take_whole``, ``MessageReader.message_size``) takes exactly what
it may and leaves everything else to the general path, frames holding several
messages come out in order, the limits are inclusive where the wire says so,
and the status codes and message types are the wire's numbers."""

from __future__ import annotations


import pytest

from mokka.nri.codec import mux, ttrpc
from mokka.nri.codec.conn import Connection
from mokka.nri.codec.mux import NEED_DATA, FrameReader, ProtocolError, ReceiveBuffer
from mokka.nri.codec.ttrpc import MessageReader, Rejected, RequestReceived, ResponseReceived
from mokka.nri.plugin import PLUGIN_SERVICE


def frame(conn_id: int, payload: bytes) -> bytes:
    return (conn_id.to_bytes(4, "big") + len(payload).to_bytes(4, "big")) + payload


def message(stream_id: int, msg_type: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + stream_id.to_bytes(4, "big") + bytes((msg_type, 0)) \
        + payload


def request(stream_id: int, method: str = "Synchronize") -> bytes:
    return ttrpc.encode_request(stream_id, PLUGIN_SERVICE, method)


def ttrpc_size(data, offset: int, length: int) -> int | None:
    """message_size as the connection asks it, for conn 1, from a fresh reader."""
    return MessageReader(1).message_size(data, offset, length)


def whole(reader: FrameReader):
    return reader.take_whole({1: ttrpc_size, 2: ttrpc_size})


# --- the one-step path ------------------------------------------------------------

def test_a_whole_message_in_one_frame_is_taken_in_one_step_and_nothing_is_left():
    msg = request(1)
    reader = FrameReader()
    reader.receive_data(frame(1, msg))
    assert whole(reader) == mux.Frame(1, msg)
    assert reader.buffered == 0


def test_a_message_over_two_frames_is_joined_and_what_follows_left():
    msg = request(1, "Configure")
    reader = FrameReader()
    reader.receive_data(frame(1, msg[:12]) + frame(1, msg[12:-1]) + frame(1, msg[-1:]) + b"\x00\x00")
    assert whole(reader) == mux.Frame(1, msg)
    assert reader.trailing_data == b"\x00\x00"


@pytest.mark.parametrize("wire", [
    frame(1, request(1))[:-1],                                     # the frame is not all there
    frame(1, request(1)[:12]),                                     # the message is not all there
    frame(1, request(1)[:12]) + frame(2, request(1)[12:]),         # its rest on the other connection
    frame(1, request(1)[:12]) + frame(1, request(1)[12:])[:-1],    # its second frame is cut
    frame(1, request(1)[:12]) + frame(1, request(1)[12:] + b"x"),  # a frame runs past its end
    frame(1, request(1)[:12]) + frame(1, b""),                     # an empty frame in between
    frame(1, b""),                                                 # an empty frame
    frame(1, request(1)[:9]),                                      # less than a ttrpc header
    frame(1, request(1) + request(3)),                             # two messages in one frame
    frame(1, message(1, 3, b"data")),                              # a streaming data message
    frame(1, message(1, 1, b"x" * (4 << 20) + b"x")),              # over ttrpc's 4 MiB
], ids=["frame cut", "message cut", "rest on the other connection", "second frame cut",
        "frame past the message",
        "empty frame in between", "empty frame", "under a ttrpc header", "two messages",
        "data message", "over the limit"])
def test_anything_but_whole_messages_in_whole_frames_is_left_to_the_general_path(wire):
    reader = FrameReader()
    reader.receive_data(wire)
    assert whole(reader) is None
    assert reader.trailing_data == wire                            # nothing taken


def test_the_one_step_path_waits_while_a_frame_is_half_read():
    reader = FrameReader()
    reader.receive_data(frame(1, b"0123456789abcdef")[:12])
    assert reader.next_frame() == mux.Frame(1, b"0123")            # 12 more bytes are due
    reader.receive_data(b"456789abcdef" + frame(1, request(1)))
    assert whole(reader) is None
    assert reader.next_frame() == mux.Frame(1, b"456789abcdef")
    assert whole(reader) == mux.Frame(1, request(1))


def test_the_one_step_path_stays_shut_on_a_broken_stream():
    reader = FrameReader(max_payload=8)
    reader.receive_data(frame(1, b"123456789"))
    with pytest.raises(ProtocolError):
        reader.next_frame()
    reader.receive_data(frame(1, request(1)))
    assert whole(reader) is None


def test_message_size_only_at_a_boundary_and_for_requests_and_responses():
    msg = request(1)
    assert ttrpc_size(msg, 0, len(msg)) == len(msg)
    reply = message(3, 2, b"ok")
    assert ttrpc_size(reply, 0, len(reply)) == 12
    assert ttrpc_size(message(1, 3, b"data"), 0, 14) is None
    mid = MessageReader(1)
    mid.receive_data(msg[:5])                                      # in the middle of one
    assert mid.message_size(msg, 0, len(msg)) is None


# --- order and limits ---------------------------------------------------------------

def test_messages_sharing_a_frame_come_out_in_order_before_the_next_frame():
    conn = Connection()
    conn.receive_data(frame(1, request(1, "Configure") + request(3, "Synchronize"))
                      + frame(1, request(5, "Shutdown")))
    assert [(e.stream_id, e.method) for e in conn.events()] == [
        (1, "Configure"), (3, "Synchronize"), (5, "Shutdown")]


def test_a_header_claiming_exactly_the_discard_limit_is_skipped_one_more_is_corrupt():
    at_limit = MessageReader(1, max_payload=64, max_discard=100)
    at_limit.receive_data(message(1, 1, b"x" * 100) + request(3))
    first = at_limit.next_event()
    assert isinstance(first, Rejected) and (first.stream_id, first.code) == (1, 8)
    assert at_limit.next_event().stream_id == 3
    over = MessageReader(1, max_payload=64, max_discard=100)
    over.receive_data(message(1, 1, b"x" * 101))
    with pytest.raises(ProtocolError):
        over.next_event()


def test_an_oversized_response_reads_resource_exhausted():
    reader = MessageReader(2, max_payload=4)
    reader.receive_data(message(7, 2, b"12345"))
    event = reader.next_event()
    assert isinstance(event, ResponseReceived) and (event.stream_id, event.code) == (7, 8)
    assert event.message == "message length 5 exceeds maximum message size 4"


def test_an_undecodable_response_reads_internal():
    reader = MessageReader(2)
    reader.receive_data(message(1, 2, b"\xff\xff\xff"))
    event = reader.next_event()
    assert (event.code, event.message.startswith("unmarshal response error: ")) == (13, True)


# --- the receive buffer ----------------------------------------------------------

def test_the_receive_buffer_hands_out_what_it_holds_and_never_more():
    buf = ReceiveBuffer()
    buf.append(b"0123456789")
    assert buf.take(4) == b"0123"
    assert buf.peek(7) is None and buf.take(7) is None             # 6 left
    assert buf.peek(6) == b"456789" and len(buf) == 6
    assert buf.take_up_to(100) == b"456789" and len(buf) == 0
    buf.append(b"ab")
    assert bytes(buf) == b"ab"


def test_the_receive_buffer_keeps_its_contents_across_compaction():
    buf = ReceiveBuffer()
    data = bytes(range(256)) * 1024                                # 256 KiB
    buf.append(data)
    taken = b"".join(buf.take(1000) for _ in range(100))           # past 64 KiB: compacts
    assert taken == data[:100_000] and bytes(buf) == data[100_000:]
    assert buf.take_up_to(70_000) == data[100_000:170_000]
    buf.append(b"end")
    assert len(buf) == len(data) - 170_000 + 3
    assert bytes(buf) == data[170_000:] + b"end"


# --- wire numbers ------------------------------------------------------------------

def test_status_codes_and_message_types_are_the_wires():
    # gRPC's codes (google.golang.org/grpc/codes) and ttrpc's message types.
    assert (ttrpc.OK, ttrpc.UNKNOWN, ttrpc.INVALID_ARGUMENT, ttrpc.RESOURCE_EXHAUSTED,
            ttrpc.UNIMPLEMENTED, ttrpc.INTERNAL) == (0, 2, 3, 8, 12, 13)
    assert (ttrpc.TYPE_REQUEST, ttrpc.TYPE_RESPONSE, ttrpc.TYPE_DATA) == (1, 2, 3)


def test_events_are_values():
    event = Rejected(1, 3, 8, "too large")
    with pytest.raises(AttributeError):
        event.code = 0
    assert {event, Rejected(1, 3, 8, "too large")} == {event}
    for made in (lambda: RequestReceived(1, 1, "s", "m", b""), lambda: ResponseReceived(1, 1)):
        assert hash(made()) == hash(made())
        with pytest.raises(AttributeError):
            made().stream_id = 3


def test_an_oversized_request_still_obeys_the_stream_rule():
    reader = MessageReader(1, max_payload=4)
    reader.receive_data(message(2, 1, b"12345") + message(5, 1, b"12345") + request(3))
    even, oversized, behind = reader.next_event(), reader.next_event(), reader.next_event()
    assert (even.stream_id, even.code) == (2, 3)                   # even id: INVALID_ARGUMENT
    assert (oversized.stream_id, oversized.code) == (5, 8)         # RESOURCE_EXHAUSTED
    assert (behind.stream_id, behind.code) == (3, 3)               # 3 after 5: INVALID_ARGUMENT
    assert behind.message == "StreamID 3 must be odd and greater than 5"


def test_an_undecodable_request_is_rejected_with_the_parsers_words():
    reader = MessageReader(1)
    reader.receive_data(message(1, 1, b"\xff\xff\xff"))
    event = reader.next_event()
    assert (event.code, event.message) == (
        3, "unmarshal request error: Error parsing message with type 'ttrpc.Request': "
           "Wire format was corrupt")


def test_a_frame_inside_a_half_read_frame_is_payload_not_a_frame():
    inner = frame(1, request(1))
    reader = FrameReader()
    reader.receive_data(frame(1, b"head" + inner)[:12])
    assert reader.next_frame() == mux.Frame(1, b"head")
    reader.receive_data(inner)
    assert whole(reader) is None
    assert reader.next_frame() == mux.Frame(1, inner)


def test_a_frame_of_exactly_the_limit_is_taken_one_byte_more_is_not():
    msg = request(1)
    exact = FrameReader(max_payload=len(msg))
    exact.receive_data(frame(1, msg))
    assert whole(exact) == mux.Frame(1, msg)
    over = FrameReader(max_payload=len(msg) - 1)
    over.receive_data(frame(1, msg))
    assert whole(over) is None
    with pytest.raises(ProtocolError):
        over.next_frame()


def test_after_a_protocol_error_nothing_more_is_taken():
    msg = request(1)
    reader = FrameReader(max_payload=len(msg))
    reader.receive_data((1).to_bytes(4, "big") + (len(msg) + 1).to_bytes(4, "big"))
    with pytest.raises(ProtocolError):
        reader.next_frame()
    reader.receive_data(frame(1, msg))                             # a valid frame after it
    assert whole(reader) is None
    with pytest.raises(ProtocolError):
        reader.next_frame()


def test_while_an_oversized_message_streams_past_its_bytes_are_no_message():
    reader = MessageReader(1, max_payload=16)
    reader.receive_data(message(1, 1, b"x" * 100)[:20])              # header and 10 bytes of 100
    assert isinstance(reader.next_event(), Rejected)
    assert reader.next_event() is NEED_DATA and reader.buffered == 0  # 90 bytes still to drop
    looks_whole = message(3, 1, b"abc")                            # the rest may look like one
    assert MessageReader(1, max_payload=16).message_size(looks_whole, 0, 13) == 13
    assert reader.message_size(looks_whole, 0, 13) is None


def test_a_header_written_without_flags_carries_flags_0():
    assert ttrpc.encode_header(ttrpc.Header(1, 2, 3)) == bytes.fromhex("00000001 00000002 03 00")


def test_whole_requests_obey_the_stream_rule_too():
    # Each arrives whole (the one-step path): a reused, even or older stream id
    # is refused all the same.
    conn = Connection()
    for sid in (3, 3, 2, 1, 5):
        conn.receive_data(Connection.request_bytes(1, sid, PLUGIN_SERVICE, "CreateContainer", b"p"))
    events = conn.events()
    assert [(type(e).__name__, e.stream_id) for e in events] == [
        ("RequestReceived", 3), ("Rejected", 3), ("Rejected", 2), ("Rejected", 1),
        ("RequestReceived", 5)]
    assert {e.code for e in events if isinstance(e, Rejected)} == {ttrpc.INVALID_ARGUMENT}


def test_a_broken_stream_stays_broken_with_nothing_more_received():
    conn = Connection(max_frame=16)
    conn.receive_data(mux.FRAME_HEADER.pack(1, 17))
    for _ in range(2):
        with pytest.raises(ProtocolError):
            conn.next_event()


def test_buffered_counts_the_bytes_not_yet_handed_out():
    conn = Connection()
    message = Connection.request_bytes(1, 1, PLUGIN_SERVICE, "CreateContainer", b"x" * 100)
    conn.receive_data(message[:50])
    assert conn.next_event() is NEED_DATA
    assert conn.buffered == 42                  # 50 less the 8-byte frame header read
    conn.receive_data(message[50:])
    assert isinstance(conn.next_event(), RequestReceived)
    assert conn.buffered == 0
    # A whole message taken while the next is still arriving: only the latter counts.
    whole = Connection.request_bytes(1, 3, PLUGIN_SERVICE, "CreateContainer", b"y")
    arriving = Connection.request_bytes(1, 5, PLUGIN_SERVICE, "CreateContainer", b"z" * 100)
    conn.receive_data(whole + arriving[:30])
    assert isinstance(conn.next_event(), RequestReceived)
    assert conn.buffered == 30
