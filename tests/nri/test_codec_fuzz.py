"""Fuzzing the codec: truncated, oversized, interleaved and garbage input never
raises anything but ProtocolError and never hangs; valid input in any split
and any cross-connection interleaving decodes to exactly what was sent."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mokka.nri.codec import mux, ttrpc
from mokka.nri.codec.conn import Connection
from mokka.nri.codec.mux import NEED_DATA, FrameReader, ProtocolError
from mokka.nri.codec.ttrpc import RequestReceived, ResponseReceived

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def drain(conn: Connection, data: bytes, cuts: list[int]) -> tuple[list, bool]:
    """Feed ``data`` split at ``cuts``; (events, hit a ProtocolError)."""
    events = []
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    try:
        for a, b in zip(bounds, bounds[1:]):
            conn.receive_data(data[a:b])
            # Each next_event call consumes input or returns NEED_DATA, so this
            # loop is bounded by the bytes fed: a hang would be a bug.
            for _ in range(len(data) + 2):
                event = conn.next_event()
                if event is NEED_DATA:
                    break
                events.append(event)
            else:
                raise AssertionError("next_event did not settle on NEED_DATA")
    except ProtocolError:
        return events, True
    return events, False


small = dict(max_frame=1 << 16, max_message=1 << 14, max_discard=1 << 20)


def claims_absurd(stream: bytes) -> bool:
    """Walk one connection's ttrpc headers as a reader would: does one claim
    more than ``small``'s max_discard?"""
    pos = 0
    while pos + ttrpc.HEADER_SIZE <= len(stream):
        length = ttrpc.decode_header(stream[pos:pos + ttrpc.HEADER_SIZE]).length
        if length > small["max_discard"]:
            return True
        pos += ttrpc.HEADER_SIZE + length
    return False

requests = st.builds(
    RequestReceived,
    conn_id=st.sampled_from(mux.CONN_IDS),
    stream_id=st.just(0),            # numbered below: odd and increasing per connection
    service=st.text(max_size=40), method=st.text(max_size=20),
    payload=st.binary(max_size=10_000), timeout_nano=st.integers(0, 2**62))
responses = st.builds(
    ResponseReceived,
    conn_id=st.sampled_from(mux.CONN_IDS), stream_id=st.integers(0, 2**32 - 1),
    payload=st.binary(max_size=10_000), code=st.integers(0, 16),
    message=st.text(max_size=30))


def number(events):
    next_id = {cid: 1 for cid in mux.CONN_IDS}
    out = []
    for e in events:
        if isinstance(e, RequestReceived):
            e = RequestReceived(e.conn_id, next_id[e.conn_id], e.service, e.method,
                                e.payload, e.timeout_nano)
            next_id[e.conn_id] += 2
        if isinstance(e, ResponseReceived) and not e.code:
            e = ResponseReceived(e.conn_id, e.stream_id, e.payload)
        out.append(e)
    return out


def encode(e) -> bytes:
    if isinstance(e, RequestReceived):
        return Connection.request_bytes(e.conn_id, e.stream_id, e.service, e.method,
                                        e.payload, e.timeout_nano)
    return Connection.response_bytes(e.conn_id, e.stream_id, e.payload, e.code, e.message)


def frames_of(wire: bytes) -> list[mux.Frame]:
    reader, out = FrameReader(), []
    reader.receive_data(wire)
    while (f := reader.next_frame()) is not NEED_DATA:
        out.append(f)
    return out


@FUZZ
@given(st.binary(max_size=4000), st.lists(st.integers(0, 4000), max_size=20))
def test_garbage_raises_only_protocol_error(data, cuts):
    drain(Connection(), data, cuts)
    drain(Connection(**small), data, cuts)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from([0, 1, 2, 3, 7]), st.binary(max_size=600)),
                max_size=12),
       st.lists(st.integers(0, 8000), max_size=10))
def test_garbage_inside_valid_frames_never_breaks_the_stream(frames, cuts):
    wire = b"".join(mux.encode_frame(cid, payload) for cid, payload in frames)
    events, broken = drain(Connection(**small), wire, cuts)
    # Framing was valid: at worst events are rejected, unless a ttrpc header
    # claims more than anyone would drain - then, and only then, the stream breaks.
    streams = {cid: b"".join(p for c, p in frames if c == cid) for cid in mux.CONN_IDS}
    assert broken == any(claims_absurd(s) for s in streams.values())
    assert all(isinstance(e, (RequestReceived, ResponseReceived, ttrpc.Rejected))
               for e in events)


@FUZZ
@given(st.lists(st.one_of(requests, responses), min_size=1, max_size=6),
       st.lists(st.integers(0, 80_000), max_size=12), st.randoms(use_true_random=False))
def test_valid_messages_survive_any_split_and_interleaving(events, cuts, rnd):
    events = number(events)
    # Per connection the frames stay in order; across connections shuffle them.
    queues = {cid: [] for cid in mux.CONN_IDS}
    for e in events:
        queues[e.conn_id] += frames_of(encode(e))
    wire = b""
    while any(queues.values()):
        cid = rnd.choice([c for c, q in queues.items() if q])
        f = queues[cid].pop(0)
        wire += mux.encode_frame(f.conn_id, f.payload)
    got, broken = drain(Connection(), wire, cuts)
    assert not broken
    for cid in mux.CONN_IDS:
        assert [e for e in got if e.conn_id == cid] == [e for e in events if e.conn_id == cid]


@FUZZ
@given(st.lists(st.one_of(requests, responses), min_size=1, max_size=4), st.data())
def test_truncated_input_yields_a_prefix_and_waits(events, data):
    events = number(events)
    wire = b"".join(encode(e) for e in events)
    cut = data.draw(st.integers(0, len(wire)))
    got, broken = drain(Connection(), wire[:cut], [])
    assert not broken
    assert got == events[:len(got)]


@FUZZ
@given(st.integers(0, 2**32 - 1), st.sampled_from(mux.CONN_IDS), st.integers(0, 3),
       st.binary(max_size=64))
def test_oversized_lengths_are_rejected_without_buffering(length, cid, msg_type, tail):
    conn = Connection(max_frame=1 << 16, max_message=1 << 10)
    header = ttrpc.encode_header(ttrpc.Header(length, 1, msg_type))
    events, broken = drain(conn, mux.encode_frame(cid, header + tail), [])
    # Either the frame fits and the message is rejected / skipped / pending, or
    # it is a protocol error; nothing else.
    assert broken or all(isinstance(e, (ttrpc.Rejected, ResponseReceived, RequestReceived))
                         for e in events)
    big, broken = drain(Connection(max_frame=16), mux.FRAME_HEADER.pack(cid, 17) + tail, [])
    assert broken and big == []
