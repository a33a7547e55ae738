"""Two node agents (two roots, two node names) whose relays listen on 127.0.0.2 and
127.0.0.3: bookworm's ibping from one node's container environment reaches the
other node's LID and GUID through the relay."""

from __future__ import annotations

import re
import socket

import pytest

from tests.ib.tools import node_env, run_tool, start_agent, umad_shim  # noqa: F401 (fixture)
from tests.waiting import wait_until

# h100, 8 HCAs a node (mokka.core.infiniband): node-b's mlx5_2.
LID_B2, GUID_B2 = 18738, "0xa088c203876e4c05"
LID_A2 = 17306


def free_port_on_both() -> int:
    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.2", 0))
            port = a.getsockname()[1]
            try:
                b.bind(("127.0.0.3", port))
            except OSError:
                continue
            return port
    raise AssertionError("no port free on both 127.0.0.2 and 127.0.0.3")


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    port = free_port_on_both()
    a_addr, b_addr = f"127.0.0.2:{port}", f"127.0.0.3:{port}"
    roots, procs = {}, []
    for node, listen, peer in (("node-a", a_addr, b_addr), ("node-b", b_addr, a_addr)):
        root = str(tmp_path_factory.mktemp(node))
        logs = str(tmp_path_factory.mktemp(f"{node}-logs"))
        procs.append(start_agent(root, logs, node, "h100", "--ib-relay-listen", listen,
                                 "--ib-relay-peers", peer))
        roots[node] = root
    yield roots
    for proc in procs:
        assert proc.terminate() == 0


def ping_until_answered(shim, env, *args):
    """The relays find each other in the background: retry, bounded, until a pong."""
    def attempt():
        res = run_tool("IBPING", shim, env, "-c", "1", "-t", "200", *args)
        return res if "1 received" in res.stdout else None
    return wait_until(attempt, timeout=30, interval=0.2, what=f"ibping {' '.join(args)}")


def test_ibping_reaches_the_other_node_by_lid(two_nodes, umad_shim):
    res = ping_until_answered(umad_shim, node_env(two_nodes["node-a"]), str(LID_B2))
    assert re.search(rf"^Pong from node-b \(Lid {LID_B2}\): time", res.stdout, re.M)


def test_ibping_reaches_the_other_node_by_guid(two_nodes, umad_shim):
    res = ping_until_answered(umad_shim, node_env(two_nodes["node-a"]), "-G", GUID_B2)
    assert re.search(rf"^Pong from node-b \(Lid {LID_B2}\): time", res.stdout, re.M)


def test_the_other_way_round(two_nodes, umad_shim):
    res = ping_until_answered(umad_shim, node_env(two_nodes["node-b"]), str(LID_A2))
    assert re.search(rf"^Pong from node-a \(Lid {LID_A2}\): time", res.stdout, re.M)


@pytest.mark.parametrize("addr", ["10.0.0.1:18515", "0.0.0.0:18515", "localhost:1"],
                         ids=["a private address", "every address", "a host name"])
def test_a_relay_address_outside_loopback_is_refused(addr, tmp_path):
    from tests.conftest import run_mokka
    res = run_mokka("node-agent", "--once", "--host-root", str(tmp_path), "--health-addr", "",
                    "--ib-relay-listen", addr)
    assert res.returncode == 1
    assert res.stderr.startswith("node-agent: relay address ")
