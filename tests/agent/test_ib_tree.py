"""The ib simulator's tree: identities from the profile and the node name, the
attributes ibstat reads, an empty ib/ for IB-off profiles, stable across runs."""

from __future__ import annotations

import pytest

from mokka.agent import desired as ds
from mokka.agent.hostfs import File
from mokka.agent.simulators import Host
from mokka.agent.simulators import ib
from mokka.core import infiniband as ibm
from mokka.core import names
from mokka.core import profile as prof
from mokka.core.overlay import host_overlay


def host(tmp_path) -> Host:
    return Host(root=str(tmp_path), overlay=host_overlay(str(tmp_path), "/var/lib/nvml-mock"),
                fs=None, cdi_dir=str(tmp_path / "cdi"), log=None)


def desired(name: str, node: str = "node-a"):
    _, text = prof.read(name)
    return ds.build(1, name, f"<builtin>/{name}.yaml", text, node_name=node)


def read(tree: dict, tmp_path, rel: str) -> str:
    entry = tree[str(tmp_path / "var/lib/nvml-mock/ib" / rel)]
    assert isinstance(entry, File)
    return entry.data.decode()


def hca_names(tree: dict) -> set[str]:
    marker = "/sys/class/infiniband/"
    return {p.split(marker, 1)[1].split("/", 1)[0] for p in tree if marker in p}


@pytest.mark.parametrize("profile, count", [("a100", 8), ("h100", 8), ("b200", 8), ("gb200", 8),
                                            ("gb300", 8), ("t4", 0), ("l40s", 0)],
                         ids=lambda v: str(v))
def test_one_hca_per_gpu_and_none_for_ib_off_profiles(tmp_path, profile, count):
    d = desired(profile)
    tree = ib.tree(d, host(tmp_path))
    assert hca_names(tree) == {f"mlx5_{i}" for i in range(count)}
    if not count:
        assert tree == {}


def test_h100_mlx5_0_attributes_as_ibstat_reads_them(tmp_path):
    tree = ib.tree(desired("h100", "node-a"), host(tmp_path))
    base = "sys/class/infiniband/mlx5_0"
    assert read(tree, tmp_path, f"{base}/node_type") == "1: CA\n"
    assert read(tree, tmp_path, f"{base}/fw_ver") == "28.39.2048\n"
    assert read(tree, tmp_path, f"{base}/hca_type") == "MT4129\n"
    assert read(tree, tmp_path, f"{base}/board_id") == "MT_0000000838\n"
    assert read(tree, tmp_path, f"{base}/node_desc") == "node-a mlx5_0\n"
    assert read(tree, tmp_path, f"{base}/ports/1/state") == "4: ACTIVE\n"
    assert read(tree, tmp_path, f"{base}/ports/1/phys_state") == "5: LinkUp\n"
    assert read(tree, tmp_path, f"{base}/ports/1/rate") == "400 Gb/sec (4X NDR)\n"
    assert read(tree, tmp_path, f"{base}/ports/1/link_layer") == "InfiniBand\n"
    assert read(tree, tmp_path, f"{base}/ports/1/counters/port_rcv_data") == "0\n"
    assert read(tree, tmp_path, "sys/class/infiniband_mad/umad3/ibdev") == "mlx5_3\n"
    assert read(tree, tmp_path, "sys/class/infiniband_verbs/uverbs3/ibdev") == "mlx5_3\n"
    assert tree[str(tmp_path / "var/lib/nvml-mock/ib/dev/infiniband/umad0")] == File(b"", 0o666)


def test_a100_rate_and_colon_separated_prefix(tmp_path):
    tree = ib.tree(desired("a100", "node-a"), host(tmp_path))
    assert read(tree, tmp_path, "sys/class/infiniband/mlx5_1/ports/1/rate") == "200 Gb/sec (4X HDR)\n"
    # guid_prefix "a288c2:0300:ab": the first four bytes stay, the node and index fill the rest.
    assert read(tree, tmp_path, "sys/class/infiniband/mlx5_1/node_guid").startswith("a288:c203:")


@pytest.mark.parametrize("node, index, port, expected", [
    ("node-a", 0, False, 0xA088C203_00000000 | (ibm.fnv1a_23("node-a") << 9)),
    ("node-a", 0, True, 0xA088C203_00000001 | (ibm.fnv1a_23("node-a") << 9)),
    ("node-a", 5, False, 0xA088C203_0000000A | (ibm.fnv1a_23("node-a") << 9)),
], ids=["node GUID: U/L clear", "port GUID: U/L set", "index in bits 1-8"])
def test_guid_layout(node, index, port, expected):
    assert ibm.guid("a088c20300ab", node, index, port) == expected


def test_fnv1a_literals():
    # FNV-1a 32 of "" is the offset basis; of "a", 0xe40c292c (the published test vector).
    assert ibm.fnv1a32("") == 0x811C9DC5 and ibm.fnv1a32("a") == 0xE40C292C
    assert ibm.fnv1a_23("a") == 0x0C292C
    assert ibm.base_lid("a", 8) == 0x100 + (0xE40C292C % ((0xBFFF - 0x100 + 1) // 8)) * 8


def test_mock_ib_daemon_derives_the_same_identities_when_present():
    fabric = pytest.importorskip("mokka.ib.fabric")
    d = desired("h100", "node-a")
    mine = ibm.hcas(d.state["infiniband"], "node-a")
    theirs = fabric.from_state(d.state, "node-a").hcas
    assert [(h.name, h.node_guid, h.port_guid, h.lid, h.sm_lid, h.node_desc) for h in mine] == \
           [(h.name, h.node_guid, h.port_guid, h.lid, h.sm_lid, h.node_desc) for h in theirs]


def test_two_nodes_differ_in_guids_and_lid_blocks_and_a_node_is_stable(tmp_path):
    a1 = ib.tree(desired("h100", "node-a"), host(tmp_path))
    a2 = ib.tree(desired("h100", "node-a"), host(tmp_path))
    b = ib.tree(desired("h100", "node-b"), host(tmp_path))
    assert a1 == a2
    guid = "sys/class/infiniband/mlx5_0/node_guid"
    assert read(a1, tmp_path, guid) != read(b, tmp_path, guid)
    lids_a = {int(read(a1, tmp_path, f"sys/class/infiniband/mlx5_{i}/ports/1/lid"), 16) for i in range(8)}
    lids_b = {int(read(b, tmp_path, f"sys/class/infiniband/mlx5_{i}/ports/1/lid"), 16) for i in range(8)}
    assert len(lids_a) == 8 and not lids_a & lids_b
    assert all(0x100 <= lid <= 0xBFFF for lid in lids_a | lids_b)


def test_gid0_is_fe80_and_the_port_guid(tmp_path):
    tree = ib.tree(desired("h100", "node-a"), host(tmp_path))
    port_guid = ibm.guid("a088c20300ab", "node-a", 2, True)
    h = f"{port_guid:016x}"
    assert read(tree, tmp_path, "sys/class/infiniband/mlx5_2/ports/1/gids/0") == (
        f"fe80:0000:0000:0000:{h[0:4]}:{h[4:8]}:{h[8:12]}:{h[12:16]}\n")


def test_paths_come_from_names(tmp_path):
    tree = ib.tree(desired("h100"), host(tmp_path))
    root = str(tmp_path / "var/lib/nvml-mock")
    assert any(p.startswith(f"{root}/{names.IB_CLASS_DIR}/mlx5_0/") for p in tree)


def test_agent_stages_the_hcas_an_ib_off_profile_leaves_ib_empty_and_teardown_removes_it(scratch):
    import os
    from helpers import run_agent
    root, _, _ = scratch
    ov = host_overlay(root)
    assert run_agent(root, "--once", "--profile", "h100", "--node-name", "node-a").returncode == 0
    assert sorted(os.listdir(os.path.join(ov.ib, "sys/class/infiniband"))) == [f"mlx5_{i}" for i in range(8)]
    with open(os.path.join(ov.ib, "sys/class/infiniband/mlx5_0/node_desc")) as f:
        assert f.read() == "node-a mlx5_0\n"
    assert run_agent(root, "--once", "--profile", "t4").returncode == 0
    assert os.listdir(ov.ib) == []
    assert run_agent(root, "--teardown").returncode == 0
    assert not os.path.exists(ov.ib)


def test_shims_and_tools_are_staged_under_the_driver_tree_whatever_the_profile(tmp_path):
    from mokka.agent.native import NativeFiles
    from mokka.agent.simulators import pcibus
    native = NativeFiles(shims=((names.IB_UMAD_LIB_FILE, b"u"), (names.IB_VERBS_LIB_FILE, b"v"),
                                (names.IB_SYS_LIB_FILE, b"s"), (names.FS_LIB_FILE, b"f")),
                         ib_tools=(("driver/usr/bin/ibstat", b"\x7fELF-ibstat"),
                                   ("driver/usr/lib64/libibumad.so.3", b"\x7fELF-umad")))
    h = Host(root=str(tmp_path), overlay=host_overlay(str(tmp_path), "/var/lib/nvml-mock"),
             fs=None, cdi_dir=str(tmp_path / "cdi"), log=None, native=native)
    staged = ib.native_tree(h)
    local = tmp_path / "var/lib/nvml-mock/driver/usr/local/lib"
    assert staged[str(local / "libibmockumad.so.1")] == File(b"u", 0o755)
    assert staged[str(local / "libibmockverbs.so.1")] == File(b"v", 0o755)
    assert staged[str(local / "libibmocksys.so.1")] == File(b"s", 0o755)
    assert str(local / "libmockfs.so.1") not in staged             # pcibus's
    assert staged[str(tmp_path / "var/lib/nvml-mock/driver/usr/bin/ibstat")] == File(b"\x7fELF-ibstat", 0o755)
    assert pcibus.tree(desired("t4"), h)[str(local / "libmockfs.so.1")] == File(b"f", 0o755)
    # The staged paths are what the NRI plugin preloads, in its order.
    assert names.LD_PRELOAD_SHIMS == tuple(f"driver/usr/local/lib/{f}" for f in (
        "libibmockumad.so.1", "libibmockverbs.so.1", "libibmocksys.so.1", "libmockfs.so.1"))
