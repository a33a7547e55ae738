"""libibmockverbs: Debian bookworm's ibv_devinfo and ibv_devices enumerate and
query the mock HCAs of an agent-staged node through libibverbs' public API
(MOCK_IB=full, the seed-000 environment of an InfiniBand-selected container)."""

from __future__ import annotations

import re

import pytest

from mokka.core import names
from tests.native.ibnode import ib_node, shim_libs  # noqa: F401 (fixtures)


def test_ibv_devinfo_l_lists_the_hcas(ib_node):
    node = ib_node("h100")
    done = node.run("IBV_DEVINFO", "-l", env=node.ib_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout == "8 HCAs found:\n" + "".join(f"\tmlx5_{i}\n" for i in range(8)) + "\n"


def test_ibv_devinfo_d_mlx5_0_shows_port_active_and_the_profile(ib_node):
    node = ib_node("gb300")
    done = node.run("IBV_DEVINFO", "-d", "mlx5_0", env=node.ib_env())
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for line in ("hca_id:\tmlx5_0\n", "\ttransport:\t\t\tInfiniBand (0)\n",
                 "\tfw_ver:\t\t\t\t28.43.1000\n", "\tvendor_id:\t\t\t0x02c9\n",
                 "\tvendor_part_id:\t\t\t4129\n", "\tboard_id:\t\t\tMT_0000000838\n",
                 "\tphys_port_cnt:\t\t\t1\n", "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n",
                 "\t\t\tlink_layer:\t\tInfiniBand\n"):
        assert line in out, out
    ibstat = node.run("IBSTAT", "mlx5_0", env=node.ib_env()).stdout
    guid = re.search(r"Node GUID: 0x([0-9a-f]{16})", ibstat).group(1)
    assert f"\tnode_guid:\t\t\t{guid[0:4]}:{guid[4:8]}:{guid[8:12]}:{guid[12:16]}\n" in out
    lid = int(re.search(r"Base lid: (\d+)", ibstat).group(1))
    assert f"\t\t\tport_lid:\t\t{lid}\n" in out


def test_ibv_devinfo_verbose_reports_width_speed_and_gid(ib_node):
    node = ib_node("a100")
    done = node.run("IBV_DEVINFO", "-v", "-d", "mlx5_1", env=node.ib_env())
    assert done.returncode == 0, done.stderr
    assert "\t\t\tactive_width:\t\t4X (2)\n" in done.stdout
    assert "(64)\n" in done.stdout.split("active_speed:")[1].splitlines()[0] + "\n"   # HDR
    assert re.search(r"GID\[  0\]:\t\tfe80:0000:0000:0000:a288:c203:[0-9a-f]{4}:[0-9a-f]{4}", done.stdout)


def test_ibv_devices_lists_every_node_guid(ib_node):
    node = ib_node("h100")
    done = node.run("IBV_DEVICES", env=node.ib_env())
    rows = [line.split() for line in done.stdout.splitlines()[2:]]
    assert [r[0] for r in rows] == [f"mlx5_{i}" for i in range(8)]
    assert all(re.fullmatch(r"a088c203[0-9a-f]{8}", r[1]) for r in rows)
    assert len({r[1] for r in rows}) == 8


@pytest.mark.parametrize("tier", [names.IB_OFF, None, names.IB_SYSFS],
                         ids=["MOCK_IB=off: the host's verbs", "unset: the host's verbs",
                              "sysfs tier: paths only, no verbs enumeration"])
def test_below_full_the_verbs_shim_passes_through(ib_node, tier):
    node = ib_node("h100")
    env = {k: v for k, v in {**node.ib_env(), names.ENV_IB: tier}.items() if v is not None}
    done = node.run("IBV_DEVINFO", "-l", env=env)
    assert "mlx5_0" not in done.stdout
    if tier != names.IB_SYSFS:
        plain = node.run("IBV_DEVINFO", "-l", env={}, preload=False)
        assert (done.returncode, done.stdout, done.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_ib_off_profile_full_tier_finds_no_hca(ib_node):
    node = ib_node("t4")
    done = node.run("IBV_DEVINFO", "-l", env=node.ib_env())
    assert done.stdout == "0 HCAs found:\n\n"
