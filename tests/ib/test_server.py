"""mock-ib's socket driver with real sockets: serving, reload, hostile clients, fuzz."""

from __future__ import annotations

import os
import socket
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mokka.core import log, names
from mokka.ib import mad as m
from mokka.ib import wire
from mokka.ib.daemon import MockIb
from tests.ib.helpers import LID_A1, NODE_A, NODE_B, smp


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("root") / names.IB_PING_SOCKET)
    d = MockIb(path, NODE_A, log.get("test-mock-ib")).start()
    yield d
    d.stop()


class Client:
    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        self.buf = wire.FrameBuffer()

    def read(self) -> tuple[int, bytes]:
        while (f := self.buf.next_frame()) is None:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionResetError("closed by mock-ib")
            self.buf.receive(data)
        return f

    def open_port(self, name: str = "mlx5_0") -> "Client":
        self.sock.sendall(wire.open_request(name, 1) + wire.register_request(0, m.CLASS_SMI))
        assert self.read()[1][:4] == b"\0\0\0\0"
        return self

    def node_desc(self, lid: int = LID_A1) -> bytes:
        self.sock.sendall(wire.send_request(0, wire.mad_addr(lid=lid, qpn=0),
                                            m.encode(smp(m.ATTR_NODE_DESC))))
        kind, payload = self.read()
        _, status, _, mad = wire.parse_recv(payload)
        assert (kind, status) == (wire.RECV, 0)
        return m.smp_data(m.decode(mad)).rstrip(b"\0")

    def close(self):
        self.sock.close()


def test_the_socket_is_world_writable(daemon):
    assert stat.S_IMODE(os.stat(daemon.server.path).st_mode) == 0o666


def test_reload_takes_a_new_profile_without_dropping_clients(daemon):
    client = Client(daemon.server.path).open_port("mlx5_1")
    try:
        assert client.node_desc() == b"node-a mlx5_1"
        daemon.reload(NODE_B)
        assert client.node_desc(0xA24D) == b"node-b mlx5_1"
    finally:
        daemon.reload(NODE_A)
        client.close()


@pytest.mark.parametrize("junk", [
    bytes.fromhex("ffffffff01"), wire.frame(0x42), wire.register_request(0, 1),
    wire.frame(wire.OPEN, b"\0"),
], ids=["huge length", "unknown type", "register before open", "short open"])
def test_a_hostile_client_is_closed_and_the_others_keep_being_served(daemon, junk):
    good = Client(daemon.server.path).open_port()
    bad = Client(daemon.server.path)
    try:
        bad.sock.sendall(junk)
        with pytest.raises(ConnectionResetError):
            bad.read()
        assert good.node_desc() == b"node-a mlx5_1"
    finally:
        good.close()
        bad.close()


def test_a_garbage_mad_on_an_open_port_gets_an_error_status(daemon):
    client = Client(daemon.server.path).open_port()
    try:
        client.sock.sendall(wire.send_request(0, wire.mad_addr(lid=LID_A1, qpn=0), b"\x07" * 30))
        _, payload = client.read()
        assert wire.parse_recv(payload)[1] == 22
        assert client.node_desc() == b"node-a mlx5_1"
    finally:
        client.close()


MADS = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda head, rest: head + rest,
              st.sampled_from([bytes([1, c, v, meth]) for c in (0x01, 0x03, 0x32, 0x81, 0x04)
                               for v in (1, 2) for meth in (1, 2, 0x12, 0x81, 7)]),
              st.binary(max_size=260)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mads=st.lists(MADS, min_size=1, max_size=5), cut=st.integers(min_value=0, max_value=40))
def test_fuzz_random_and_truncated_mads_never_stop_the_daemon(daemon, mads, cut):
    client = Client(daemon.server.path).open_port()
    try:
        frames = b"".join(wire.send_request(0, wire.mad_addr(lid=LID_A1, qpn=0), mad)
                          for mad in mads)
        client.sock.sendall(frames[:len(frames) - cut] if cut else frames)
    finally:
        client.close()
    probe = Client(daemon.server.path).open_port()
    try:
        assert probe.node_desc() == b"node-a mlx5_1"
    finally:
        probe.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_fuzz_random_bytes_on_a_fresh_connection_never_stop_the_daemon(daemon, data):
    bad = Client(daemon.server.path)
    bad.sock.sendall(data)
    bad.close()
    probe = Client(daemon.server.path).open_port()
    try:
        assert probe.node_desc() == b"node-a mlx5_1"
    finally:
        probe.close()
