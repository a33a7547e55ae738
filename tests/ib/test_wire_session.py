"""The socket's frames and one connection's state machine, with no socket."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mokka.ib import mad as m
from mokka.ib import wire
from mokka.ib.session import Relay, Session
from tests.ib.helpers import LID_A1, LID_B1, NODE_A, NODE_B, ping, smp

OPEN_BYTES = bytes.fromhex("00000019" "01") + b"mlx5_1".ljust(20, b"\0") + bytes.fromhex("00000001")
FRAMES = [
    ("open mlx5_1 port 1", wire.open_request("mlx5_1", 1), OPEN_BYTES),
    ("register SMI agent 0", wire.register_request(0, 0x01),
     bytes.fromhex("0000001d" "02" "00000000" "010100" "00" "00000000") + bytes(16)),
    ("unregister agent 3", wire.unregister_request(3), bytes.fromhex("00000005" "03" "00000003")),
    ("query the CA names", wire.query_request(wire.QUERY_CAS), bytes.fromhex("00000001" "07")),
]


@pytest.mark.parametrize("name, built, expected", FRAMES, ids=[f[0] for f in FRAMES])
def test_frames_have_their_documented_bytes(name, built, expected):
    assert built == expected


@pytest.mark.parametrize("feed", ["whole", "byte by byte"])
def test_frame_buffer_yields_whole_frames_and_keeps_trailing_bytes(feed):
    buf = wire.FrameBuffer()
    data = OPEN_BYTES + OPEN_BYTES[:7]
    chunks = [data] if feed == "whole" else [data[i:i + 1] for i in range(len(data))]
    frames = []
    for chunk in chunks:
        buf.receive(chunk)
        while (f := buf.next_frame()) is not None:
            frames.append(f)
    assert frames == [(0x01, OPEN_BYTES[5:])]
    assert buf.pending == 7


@pytest.mark.parametrize("head", [bytes.fromhex("00000000"), bytes.fromhex("00002001")],
                         ids=["empty frame", "frame above 8192 bytes"])
def test_a_frame_length_out_of_bounds_is_a_wire_error(head):
    buf = wire.FrameBuffer()
    buf.receive(head)
    with pytest.raises(wire.WireError):
        buf.next_frame()


def session(fabric=NODE_A, directory=()) -> Session:
    return Session(fabric=lambda: fabric, directory=lambda: directory)


def recv(frames) -> tuple[int, int, m.Mad]:
    [out] = frames
    buf = wire.FrameBuffer()
    buf.receive(out)
    kind, payload = buf.next_frame()
    assert kind == wire.RECV
    agent, status, _addr, mad = wire.parse_recv(payload)
    return agent, status, m.decode(mad)


def test_open_with_no_name_picks_the_first_active_hca():
    assert session().receive(wire.open_request("", 0)) == [
        bytes.fromhex("0000001d" "81" "00000000") + b"mlx5_0".ljust(20, b"\0") + bytes.fromhex("00000001")]


def test_open_of_an_unknown_hca_is_enodev_and_closes():
    s = session()
    assert s.receive(wire.open_request("mlx5_9", 1))[0][5:9] == bytes.fromhex("ffffffed")
    assert s.done


def test_a_registered_agent_gets_the_answer_to_its_send():
    s = session()
    s.receive(wire.open_request("mlx5_0", 1) + wire.register_request(5, m.CLASS_SMI))
    agent, status, reply = recv(s.receive(wire.send_request(
        5, wire.mad_addr(lid=LID_A1, qpn=0), m.encode(smp(m.ATTR_NODE_DESC)))))
    assert (agent, status, reply.method) == (5, 0, 0x81)
    assert m.smp_data(reply)[:13] == b"node-a mlx5_1"


def test_a_send_from_an_unregistered_agent_comes_back_einval():
    s = session()
    s.receive(wire.open_request("mlx5_0", 1))
    agent, status, _ = recv(s.receive(wire.send_request(9, wire.mad_addr(lid=LID_A1, qpn=0),
                                                        m.encode(smp(m.ATTR_NODE_DESC)))))
    assert (agent, status) == (9, 22)


def test_an_unreachable_lid_comes_back_etimedout_with_the_request():
    s = session()
    s.receive(wire.open_request("mlx5_0", 1) + wire.register_request(0, m.CLASS_OPENIB_PING))
    agent, status, back = recv(s.receive(wire.send_request(0, wire.mad_addr(lid=0x42, qpn=1),
                                                           m.encode(ping()))))
    assert (agent, status, back.method) == (0, 110, m.METHOD_GET)


def test_a_peer_lid_becomes_a_relay_action():
    s = session(directory=NODE_B.hcas)
    s.receive(wire.open_request("mlx5_0", 1) + wire.register_request(2, m.CLASS_OPENIB_PING))
    [action] = s.receive(wire.send_request(2, wire.mad_addr(lid=LID_B1, qpn=1), m.encode(ping())))
    assert isinstance(action, Relay) and (action.agent_id, action.dlid) == (2, LID_B1)


def test_the_fabric_is_read_per_mad_so_a_reload_reaches_an_open_port():
    current = {"fabric": NODE_A}
    s = Session(fabric=lambda: current["fabric"])
    s.receive(wire.open_request("mlx5_1", 1) + wire.register_request(0, m.CLASS_SMI))
    current["fabric"] = NODE_B
    _, _, reply = recv(s.receive(wire.send_request(0, wire.mad_addr(lid=0xA24D, qpn=0),
                                                   m.encode(smp(m.ATTR_NODE_DESC)))))
    assert m.smp_data(reply)[:13] == b"node-b mlx5_1"


@pytest.mark.parametrize("data, message", [
    (wire.register_request(0, 1), "umad request before OPEN"),
    (wire.open_request("", 0) + wire.open_request("", 0), "second OPEN on one connection"),
    (wire.frame(0x42, b""), "unknown frame type 0x42"),
    (wire.frame(wire.SEND, b"\0" * 10), "frame type 0x04: payload of 10 bytes is short"),
], ids=["register before open", "two opens", "unknown type", "short send"])
def test_protocol_violations_are_wire_errors(data, message):
    with pytest.raises(wire.WireError, match=message):
        session().receive(data)


def test_port_query_answers_what_umad_get_port_fills():
    [out] = session().receive(wire.query_request(wire.QUERY_PORT, "mlx5_1", 1))
    assert out == wire.port_answer(0, ca_name="mlx5_1", port=1, base_lid=0x7127, sm_lid=0x7126,
                                   state=4, phys_state=5, rate=400, capmask=0x2659E848,
                                   gid_prefix=0xFE80000000000000, port_guid=0xA088C203876B2603,
                                   link_layer="InfiniBand")


def test_a_node_without_infiniband_opens_no_port():
    empty = session(fabric=NODE_A.__class__("node-c", ()))
    assert empty.receive(wire.open_request("", 0))[0][5:9] == bytes.fromhex("ffffffed")
    assert session(fabric=NODE_A.__class__("node-c", ())).receive(
        wire.query_request(wire.QUERY_CAS)) == [bytes.fromhex("00000005" "87" "00000000")]


FRAME_KINDS = st.sampled_from([wire.OPEN, wire.REGISTER, wire.UNREGISTER, wire.SEND,
                               wire.QUERY_PORT, wire.QUERY_CA, wire.QUERY_CAS, 0x00, 0x99])


@settings(max_examples=300, deadline=None)
@given(frames=st.lists(st.tuples(FRAME_KINDS, st.binary(max_size=300)), max_size=8),
       tail=st.binary(max_size=8))
def test_fuzz_a_session_answers_or_refuses_and_never_raises_anything_else(frames, tail):
    s = session(directory=NODE_B.hcas)
    data = wire.open_request("", 0) + b"".join(wire.frame(k, p) for k, p in frames) + tail
    try:
        out = s.receive(data)
    except wire.WireError:
        return
    for item in out:
        assert isinstance(item, (bytes, Relay))
