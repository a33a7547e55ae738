"""The agent's mock-ib across a profile swap: Reload, not a restart, so an open
umad port stays connected and answers from the new profile."""

from __future__ import annotations

import os

from mokka.agent import desired as ds
from mokka.core.overlay import host_overlay
from mokka.ib import mad as m
from mokka.ib import wire
from tests.agent.helpers import configmap_dir, profile_bytes
from tests.ib.test_server import Client
from tests.ib.tools import start_agent

# node-a: h100 with 4 GPUs has 4 HCAs from LID 8780; a100 with 2 has 2 from LID 28966.
from tests.waiting import wait_until
H100_MLX5_1, A100_MLX5_1 = 8781, 28967


def node_desc(client: Client, lid: int) -> tuple[int, bytes]:
    client.sock.sendall(wire.send_request(0, wire.mad_addr(lid=lid, qpn=0),
                                          m.encode(m.Mad(mgmt_class=m.CLASS_SMI,
                                                         method=m.METHOD_GET, tid=1,
                                                         attr_id=m.ATTR_NODE_DESC))))
    _, payload = client.read()
    _, status, _, mad = wire.parse_recv(payload)
    return status, m.smp_data(m.decode(mad)).rstrip(b"\0")


def hca_names(path: str) -> bytes:
    c = Client(path)
    try:
        c.sock.sendall(wire.query_request(wire.QUERY_CAS))
        return c.read()[1]
    finally:
        c.close()


def test_a_profile_swap_reloads_mock_ib_and_keeps_the_open_port(tmp_path):
    root, outside = str(tmp_path / "host"), str(tmp_path / "outside")
    os.makedirs(root)
    cm = os.path.join(outside, "cm")
    a, b = profile_bytes("h100", 4), profile_bytes("a100", 2)
    configmap_dir(cm, {"profile.yaml": a}, "v1")
    profile = os.path.join(cm, "profile.yaml")
    agent = start_agent(root, outside, "node-a", profile)
    try:
        sock = host_overlay(root).ib_ping_socket
        client = Client(sock).open_port("mlx5_1")
        assert node_desc(client, H100_MLX5_1) == (0, b"node-a mlx5_1")
        assert hca_names(sock) == bytes.fromhex("00000004") + b"".join(
            f"mlx5_{i}".encode().ljust(20, b"\0") for i in range(4))

        configmap_dir(cm, {"profile.yaml": b}, "v2")
        agent.wait_staged(ds.build(0, profile, profile, b, None, "", "node-a",
                                   identity_node="node-a").digest)

        # Staged comes before the daemons' Reload in a pass: wait for the new answer.
        wait_until(lambda: node_desc(client, A100_MLX5_1) == (0, b"node-a mlx5_1"),
                   what="mock-ib answering from the new profile on the open port")
        assert node_desc(client, H100_MLX5_1)[0] == 110         # that LID is gone: ETIMEDOUT
        assert hca_names(sock) == bytes.fromhex("00000002") + b"".join(
            f"mlx5_{i}".encode().ljust(20, b"\0") for i in range(2))
        client.close()
    finally:
        assert agent.terminate() == 0


def test_a_socket_path_too_long_fails_readiness_naming_mock_ib(tmp_path):
    root = str(tmp_path / ("h" * 60) / ("o" * 40))
    os.makedirs(root)
    from tests.agent.helpers import AgentProcess
    agent = AgentProcess(root, "--profile", "h100", "--node-name", "node-a",
                         "--resync-interval", "0", log_dir=str(tmp_path))
    try:
        agent.wait_staged()
        status, body = wait_until(lambda: (lambda r: r if r[1].get("simulator") == "mock-ib"
                                           else None)(agent.probe("/readyz")),
                                  what="/readyz naming mock-ib")
        assert status == 503
        assert body["reason"].startswith("mock-ib cannot serve: [Errno 36] socket path longer "
                                         "than 107 bytes: ")
    finally:
        assert agent.terminate() == 0
