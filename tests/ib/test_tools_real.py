"""sminfo and ibping from Debian bookworm, in the environment of an InfiniBand-selected
container, against a node agent serving on a scratch root."""

from __future__ import annotations

import os
import re

import pytest

from mokka.core import names
from tests.ib.tools import node_env, run_tool, start_agent, sys_shim, umad_shim  # noqa: F401

NODE = "node-a"
# node-a on h100 (8 HCAs, mokka.core.infiniband): the SM is mlx5_0.
SM_LID, LID_3, GUID_3 = 17304, 0x439B, "0xa088c203876b2607"


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("host"))
    logs = str(tmp_path_factory.mktemp("logs"))
    proc = start_agent(root, logs, NODE, "h100")
    yield root, proc
    assert proc.terminate() == 0
    assert not os.path.exists(os.path.join(root, "var/lib/nvml-mock", names.IB_PING_SOCKET))


def test_sminfo_reports_a_master(agent, umad_shim):
    root, _ = agent
    res = run_tool("SMINFO", umad_shim, node_env(root))
    assert res.returncode == 0, res.stderr
    assert res.stdout == (f"sminfo: sm lid {SM_LID} sm guid 0xa088c203876b2601, activity count 0 "
                          "priority 14 state 3 SMINFO_MASTER\n")


def test_ibping_by_lid_gets_three_replies(agent, umad_shim):
    root, _ = agent
    res = run_tool("IBPING", umad_shim, node_env(root), "-c", "3", str(LID_3))
    assert res.returncode == 0, res.stderr
    assert len(re.findall(rf"^Pong from {NODE} \(Lid {LID_3}\): time", res.stdout, re.M)) == 3
    assert "3 packets transmitted, 3 received, 0% packet loss" in res.stdout


def test_ibping_by_guid_resolves_through_the_sa(agent, umad_shim):
    root, _ = agent
    res = run_tool("IBPING", umad_shim, node_env(root), "-c", "1", "-G", GUID_3)
    assert res.returncode == 0, res.stderr
    assert re.search(rf"^Pong from {NODE} \(Lid {LID_3}\): time", res.stdout, re.M)


def test_ibping_to_a_lid_nobody_has_gets_no_reply(agent, umad_shim):
    root, _ = agent
    res = run_tool("IBPING", umad_shim, node_env(root), "-c", "1", "-t", "100", "66")
    assert "1 packets transmitted, 0 received, 100% packet loss" in res.stdout


def test_ibnetdiscover_walks_the_leaf_switch_to_every_hca(agent, umad_shim):
    root, _ = agent
    res = run_tool("IBNETDISCOVER", umad_shim, node_env(root))
    assert res.returncode == 0, res.stderr
    assert 'Switch\t8 "S-a088c203876b27fe"\t\t# "node-a mock leaf" enhanced port 0 lid 18 lmc 0' \
        in res.stdout
    for i in range(8):
        guid = f"a088c203876b26{2 * i:02x}"
        assert f'Ca\t1 "H-{guid}"\t\t# "node-a mlx5_{i}"' in res.stdout
        assert (f'[{i + 1}]\t"H-{guid}"[1](a088c203876b26{2 * i + 1:02x}) \t\t# '
                f'"node-a mlx5_{i}" lid {SM_LID + i} 4xNDR') in res.stdout


def test_iblinkinfo_shows_every_hca_linked_up_to_the_leaf(agent, umad_shim):
    root, _ = agent
    res = run_tool("IBLINKINFO", umad_shim, node_env(root))
    assert res.returncode == 0, res.stderr
    assert "Switch: 0xa088c203876b27fe node-a mock leaf:" in res.stdout
    for i in range(8):
        assert f"CA: node-a mlx5_{i}:" in res.stdout
        assert re.search(rf"^\s+18\s+{i + 1}\[  \] ==\( 4X\s+106.25 Gbps Active/  LinkUp\)==>"
                         rf"\s+{SM_LID + i}\s+1\[  \] \"node-a mlx5_{i}\"", res.stdout, re.M)


def test_without_mock_ib_ibstat_falls_back_to_the_sysfs_tree(agent, umad_shim, sys_shim):
    root, _ = agent
    env = {**node_env(root), names.ENV_IB_PING_SOCKET: os.path.join(root, "no-such.sock")}
    res = run_tool("IBSTAT", f"{umad_shim}:{sys_shim}", env, "mlx5_3")
    assert res.returncode == 0, res.stderr
    assert "\t\tBase lid: 17307\n" in res.stdout and "\t\tSM lid: 17304\n" in res.stdout
    ping = run_tool("SMINFO", f"{umad_shim}:{sys_shim}", env)
    assert ping.returncode != 0           # a umad port needs mock-ib: no fallback there


@pytest.mark.parametrize("tier", [names.IB_OFF, names.IB_SYSFS, None],
                         ids=["MOCK_IB=off", "MOCK_IB=sysfs", "MOCK_IB unset"])
def test_the_shim_does_nothing_unless_the_tier_is_full(agent, umad_shim, tier):
    root, _ = agent
    env = node_env(root)
    if tier is None:
        env = {}
    else:
        env[names.ENV_IB] = tier
    res = run_tool("SMINFO", umad_shim, env)
    assert res.returncode != 0 and "SMINFO_MASTER" not in res.stdout
