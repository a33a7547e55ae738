"""The fabric relay on its own: addresses, its frames on bytes, and hostile peers."""

from __future__ import annotations

import socket

import pytest

from mokka.core import log
from mokka.ib import mad as m
from mokka.ib import relay as rl
from mokka.ib import wire
from mokka.ib.daemon import MockIb
from tests.ib.helpers import LID_A1, LID_B1, NODE_A, NODE_B, ping
from tests.ib.test_relay_two_nodes import free_port_on_both
from tests.ib.test_server import Client
from tests.waiting import wait_until


@pytest.mark.parametrize("text, expected", [
    ("127.0.0.2:9000", ("127.0.0.2", 9000)),
    ("127.0.0.3", ("127.0.0.3", 18515)),
    ("127.255.0.1:1", ("127.255.0.1", 1)),
], ids=["address and port", "the default port", "anywhere in 127/8"])
def test_loopback_addresses_parse(text, expected):
    assert rl.parse_addr(text) == expected


@pytest.mark.parametrize("text, message", [
    ("10.1.2.3:18515", "relay address '10.1.2.3:18515' is outside 127.0.0.0/8"),
    ("[::1]:18515", "relay address '[::1]:18515': want IPV4[:PORT]"),
    ("127.0.0.2:0", "relay address '127.0.0.2:0': port out of range"),
    ("node-b:18515", "relay address 'node-b:18515': want IPV4[:PORT]"),
], ids=["a private address", "IPv6", "port 0", "a host name"])
def test_other_addresses_are_refused(text, message):
    with pytest.raises(ValueError) as exc:
        rl.parse_addr(text)
    assert str(exc.value) == message


def test_hello_carries_the_node_and_its_hcas_both_ways():
    frame = rl.hello(NODE_B)
    assert frame[:5] == (len(frame) - 4).to_bytes(4, "big") + bytes([0x10])
    assert frame[5:12] == b"\x06node-b"
    node, hcas = rl.parse_hello(frame[5:])
    assert node == "node-b"
    assert [(h.name, h.lid, h.sm_lid, h.port_guid, h.node_desc) for h in hcas] == [
        (h.name, h.lid, h.sm_lid, h.port_guid, h.node_desc) for h in NODE_B.hcas]


@pytest.mark.parametrize("payload", [b"", b"\x09node", b"\x01a" + b"\0" * 7],
                         ids=["empty", "name longer than the payload", "partial HCA record"])
def test_a_broken_hello_is_a_wire_error(payload):
    with pytest.raises(wire.WireError):
        rl.parse_hello(payload)


def test_a_forwarded_ping_is_answered_by_the_owner_of_the_lid():
    status, slid, reply = rl.answer_forward(NODE_B, LID_B1, m.encode(ping()))
    assert (status, slid) == (0, LID_B1) and reply[40:47] == b"node-b\0"
    assert rl.answer_forward(NODE_B, LID_A1, m.encode(ping()))[0] == 110
    assert rl.answer_forward(NODE_B, LID_B1, b"\x07" * 10)[0] == 22


def test_a_hostile_peer_is_dropped_and_the_relay_keeps_forwarding(tmp_path):
    port = free_port_on_both()
    a = MockIb(str(tmp_path / "a.sock"), NODE_A, log.get("relay-a"),
               relay=rl.Relay(("127.0.0.2", port), [("127.0.0.3", port)], log.get("ra"))).start()
    b = MockIb(str(tmp_path / "b.sock"), NODE_B, log.get("relay-b"),
               relay=rl.Relay(("127.0.0.3", port), [("127.0.0.2", port)], log.get("rb"))).start()
    try:
        for junk in (b"\xff\xff\xff\xff\x10", wire.frame(0x77), wire.frame(rl.FORWARD, b"\0")):
            with socket.create_connection(("127.0.0.3", port)) as s:
                s.sendall(junk)
        wait_until(lambda: any(h.lid == LID_B1 for h in a.relay.directory()), what="node-b seen")
        client = Client(str(tmp_path / "a.sock"))
        client.sock.sendall(wire.open_request("mlx5_0", 1)
                            + wire.register_request(0, m.CLASS_OPENIB_PING))
        client.read()
        client.sock.sendall(wire.send_request(0, wire.mad_addr(lid=LID_B1, qpn=1), m.encode(ping())))
        _, status, _, reply = wire.parse_recv(client.read()[1])
        assert status == 0 and reply[40:47] == b"node-b\0"
        client.close()
    finally:
        a.stop()
        b.stop()
