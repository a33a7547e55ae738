"""One test per framing error class, against the driver over a real socket:
each asserts the reply (always OK with no adjustment: the plugin never fails
a container's creation) or the closed connection, and that the next
CreateContainer - on the same connection or on the one the plugin opens next -
is injected."""

from __future__ import annotations

import pytest

from mokka.nri.codec import mux, ttrpc
from mokka.nri.codec.conn import Connection
from mokka.nri.codec.mux import PLUGIN_CONN
from mokka.nri.plugin import PLUGIN_SERVICE
from mokka.nri.proto import nri_pb2, ttrpc_pb2
from tests.nri.harness import pod_and_container

MIB = 1024 * 1024


def request_message(stream_id: int, payload: bytes, method: str = "CreateContainer") -> bytes:
    """A whole ttrpc request, of any size (the codec's writer refuses > 4 MiB)."""
    envelope = ttrpc_pb2.Request(service=PLUGIN_SERVICE, method=method, payload=payload,
                                 timeout_nano=2_000_000_000).SerializeToString()
    return ttrpc.encode_header(ttrpc.Header(len(envelope), stream_id, ttrpc.TYPE_REQUEST)) \
        + envelope


def create_request(i: int = 0) -> bytes:
    pod, ctr = pod_and_container(i)
    return nri_pb2.CreateContainerRequest(pod=pod, container=ctr).SerializeToString()


def assert_injected(link, i: int = 7) -> None:
    resp, out = link.create_container(*pod_and_container(i))
    assert resp.code == ttrpc.OK
    assert [(kv.key, kv.value) for kv in out.adjust.env] == [("SEEN", f"app-{i}")]


def no_adjustment(link, stream_id: int) -> None:
    assert link.wait_response(stream_id) == ttrpc.ResponseReceived(PLUGIN_CONN, stream_id)


def test_oversize_request_is_answered_no_adjustment_unbuffered_and_the_next_is_injected(harness):
    h = harness()
    link = h.link()
    link.handshake()                                   # stream ids 1, 3 used
    big = create_request() + b"\x42" * (5 * MIB)       # 5 MiB: over ttrpc's 4 MiB
    link.send(mux.encode_frames(PLUGIN_CONN, request_message(5, big), max_payload=MIB))
    no_adjustment(link, 5)                             # not RESOURCE_EXHAUSTED
    assert h.calls == []                               # never decoded, never decided
    assert h.health.counter("rejected_requests_total") == 1
    link.skip_stream_id()                              # 5 was ours
    assert_injected(link)
    assert not link.closed


@pytest.mark.parametrize("stream_id", [4, 3], ids=["even id", "id not above the last"])
def test_bad_stream_id_is_answered_no_adjustment_and_the_next_is_injected(harness, stream_id):
    h = harness()
    link = h.link()
    link.handshake()                                   # stream ids 1, 3 used
    link.send(Connection.request_bytes(PLUGIN_CONN, stream_id, PLUGIN_SERVICE,
                                       "CreateContainer", create_request()))
    no_adjustment(link, stream_id)                     # not INVALID_ARGUMENT
    assert h.calls == []
    assert_injected(link)


def test_truncated_request_then_eof_closes_and_the_next_connection_is_injected(harness):
    h = harness()
    first = h.link()
    first.handshake()
    whole = Connection.request_bytes(PLUGIN_CONN, 5, PLUGIN_SERVICE, "CreateContainer",
                                     create_request())
    first.send(whole[:len(whole) // 2])
    first.close()                                      # the runtime went away mid-message
    assert 5 not in first.responses and h.calls == []
    second = h.link(2)
    second.handshake()
    assert_injected(second)


def test_truncated_create_container_payload_is_answered_no_adjustment(harness):
    h = harness()
    link = h.link()
    link.handshake()
    cut = create_request()[:-3]                        # a whole message, its protobuf cut
    resp = link.wait_response(link.start_call("CreateContainer", cut))
    assert resp == ttrpc.ResponseReceived(PLUGIN_CONN, resp.stream_id)
    assert h.plugin.failed_open_total == 1
    assert_injected(link)


@pytest.mark.parametrize("garbage", [
    b"\xde\xad\xbe\xef" * 8,
    mux.encode_frame(PLUGIN_CONN, ttrpc.encode_header(
        ttrpc.Header(2**32 - 1, 5, ttrpc.TYPE_REQUEST))),
], ids=["garbage bytes: an absurd frame header", "a ttrpc header claiming 4 GiB"])
def test_garbage_closes_the_connection_instead_of_draining_and_the_next_is_injected(
        harness, garbage):
    h = harness()
    first = h.link()
    first.handshake()
    first.send(garbage)
    assert first.wait_closed()                         # closed, not drained for 4 GiB
    assert h.health.counter("protocol_errors_total") == 1
    second = h.link(2)
    second.handshake()
    assert_injected(second)


def test_garbage_envelope_in_valid_framing_is_answered_no_adjustment(harness):
    h = harness()
    link = h.link()
    link.handshake()
    link.send(mux.encode_frames(PLUGIN_CONN, ttrpc.encode_message(
        5, ttrpc.TYPE_REQUEST, b"\xff\xff\xff\xff")))
    no_adjustment(link, 5)                             # not INVALID_ARGUMENT
    link.skip_stream_id()
    assert_injected(link)
