"""Compilation: deterministic, complete, and synthesizing what a profile omits."""

import json

import pytest
import yaml

from mokka.core import compile as comp
from mokka.core import names, topology
from mokka.core.profile import load, parse


def compiled(name):
    return comp.compile_profile(load(name))


@pytest.mark.parametrize("name", names.BUILTIN_PROFILES)
def test_recompiling_gives_identical_bytes(name):
    assert comp.dumps(compiled(name)) == comp.dumps(compiled(name))


#: nvidia-smi's Board ID of each GPU: (domain << 16) | (bus << 8) | (device << 3) | function.
BOARD_IDS = {
    "a100": [0x700, 0xF00, 0x4700, 0x4E00, 0x8700, 0x9000, 0xB700, 0xBD00],
    "h100": [0x1A00, 0x1B00, 0x4A00, 0x4B00, 0x8A00, 0x8B00, 0xCA00, 0xCB00],
    "b200": [0x1A00, 0x1B00, 0x4A00, 0x4B00, 0x8A00, 0x8B00, 0xCA00, 0xCB00],
    "gb200": [0xA00, 0xB00, 0x4A00, 0x4B00, 0x8A00, 0x8B00, 0xCA00, 0xCB00],
    "gb300": [0xA00, 0xB00, 0x4A00, 0x4B00, 0x8A00, 0x8B00, 0xCA00, 0xCB00],
    "l40s": [0x1700, 0x3100, 0xB100, 0xCA00, 0x1800, 0x3200, 0xB200, 0xCB00],
    "t4": [0x3B00, 0x8600, 0xAF00, 0xD800],
}


@pytest.mark.parametrize("name", names.BUILTIN_PROFILES)
def test_state_carries_what_consumers_read(name):
    p = load(name)
    state = json.loads(comp.dumps(comp.compile_profile(p)))
    assert state["schema_version"] == names.STATE_SCHEMA_VERSION
    assert state["profile"]["digest"] == p.digest
    assert state["system"]["driver_version"] == str(p.doc["system"]["driver_version"])
    assert state["gpu_count"] == len(state["gpus"]) == p.count
    for i, gpu in enumerate(state["gpus"]):
        assert gpu["index"] == i
        assert gpu["name"] == p.devices[i]["name"]
        assert gpu["uuid"].startswith("GPU-")
        assert gpu["pci"]["bus_id"].count(":") == 2 and len(gpu["pci"]["bus_id"]) == 16
        assert gpu["pci"]["bdf"] == gpu["pci"]["bus_id"][4:].lower()
        assert gpu["pci"]["vendor_id"] == 0x10DE
        assert gpu["numa_node"] >= 0 and gpu["root_complex"].startswith("pci")
        assert gpu["memory"]["total_bytes"] == p.devices[i]["memory"]["total_bytes"]
    assert len({g["uuid"] for g in state["gpus"]}) == p.count
    assert [g["board_id"] for g in state["gpus"]] == BOARD_IDS[name]


NVLINK_CASES = [
    ("a100 has six switches: NV12", "a100", 12),
    ("h100 NVSwitch: NV18", "h100", 18),
    ("gb300 NVSwitch: NV18", "gb300", 18),
    ("b200 has no switches: no links", "b200", 0),
    ("l40s has no NVLink", "l40s", 0),
    ("t4 has no NVLink", "t4", 0),
]


@pytest.mark.parametrize("name,links", [c[1:] for c in NVLINK_CASES], ids=[c[0] for c in NVLINK_CASES])
def test_nvlink_links_synthesized_only_with_switches(name, links):
    assert all(len(g["nvlink_links"]) == links for g in compiled(name)["gpus"])


@pytest.mark.parametrize("name,has_fabric", [("a100", False), ("h100", True), ("b200", False),
                                             ("gb200", True), ("gb300", True), ("l40s", False),
                                             ("t4", False)])
def test_fabric_block_only_where_the_profile_has_one(name, has_fabric):
    assert all(("fabric" in g) == has_fabric for g in compiled(name)["gpus"])


def with_count(name, n):
    p = load(name)
    doc = yaml.safe_load(p.text)
    doc["system"]["num_devices"] = n
    return parse(yaml.safe_dump(doc).encode(), source=f"{name}x{n}")


def with_devices(name, n, devices):
    """Profile ``name`` with ``n`` GPUs, its device list replaced by ``devices``."""
    doc = yaml.safe_load(load(name).text)
    doc["system"]["num_devices"] = n
    doc["devices"] = devices
    return parse(yaml.safe_dump(doc).encode(), source=f"{name}x{n}")


GB300_LISTED = [
    {"index": i, "uuid": f"GPU-b300b300-0000-0000-0000-00000000000{i}", "minor_number": i,
     "pci": {"bus_id": bus}}
    for i, bus in enumerate(["0000:0A:00.0", "0000:0B:00.0", "0000:4A:00.0", "0000:4B:00.0",
                             "0000:8A:00.0", "0000:8B:00.0", "0000:CA:00.0"])
] + [
    # GPU 7 takes the UUID and the minor the synthesizer would give GPU 48 (0x30).
    {"index": 7, "uuid": "GPU-b300b300-0000-0000-0000-000000000030", "minor_number": 48,
     "pci": {"bus_id": "0000:CB:00.0"}},
]

SYNTHESIZED_64 = [
    # index, uuid, minor number, bus id, board id
    (7, "GPU-b300b300-0000-0000-0000-000000000030", 48, "00000000:CB:00.0", 0xCB00),    # listed
    (8, "GPU-b300b300-0000-0000-0000-000000000008", 8, "00000000:01:00.0", 0x100),       # first free bus
    (16, "GPU-b300b300-0000-0000-0000-000000000010", 16, "00000000:09:00.0", 0x900),
    (17, "GPU-b300b300-0000-0000-0000-000000000011", 17, "00000000:0C:00.0", 0xC00),     # skips 0A, 0B
    (47, "GPU-b300b300-0000-0000-0000-00000000002f", 47, "00000000:2A:00.0", 0x2A00),
    (48, "GPU-b300b300-0000-0000-0000-000000001030", 49, "00000000:2B:00.0", 0x2B00),    # both taken
    (63, "GPU-b300b300-0000-0000-0000-00000000003f", 64, "00000000:3A:00.0", 0x3A00),
]


def test_synthesizes_up_to_64_gpus_deterministically():
    a = comp.compile_profile(with_devices("gb300", 64, GB300_LISTED))
    b = comp.compile_profile(with_devices("gb300", 64, GB300_LISTED))
    assert comp.dumps(a) == comp.dumps(b)
    gpus = a["gpus"]
    assert len(gpus) == 64
    # never a synthesized identity that collides with a listed one
    assert len({g["uuid"] for g in gpus}) == 64
    assert len({g["minor_number"] for g in gpus}) == 64
    assert len({g["pci"]["bus_id"] for g in gpus}) == 64
    assert len({g["board_id"] for g in gpus}) == 64
    # the listed eight keep their profile identity
    assert [g["uuid"] for g in gpus[:8]] == [d["uuid"] for d in GB300_LISTED]
    assert [g["minor_number"] for g in gpus[:8]] == [0, 1, 2, 3, 4, 5, 6, 48]
    got = [(g["index"], g["uuid"], g["minor_number"], g["pci"]["bus_id"], g["board_id"])
           for g in gpus if g["index"] in {row[0] for row in SYNTHESIZED_64}]
    assert got == SYNTHESIZED_64
    # every synthesized GPU is placed under a root complex
    placed = {bdf for r in a["pcie_topology"]["root_complexes"] for bdf in r["devices"]}
    assert {g["pci"]["bdf"] for g in gpus} <= placed


IDENTITY_CASES = [
    # id, index, uuid, minor number, bus id, board id. GPU 0 is listed with the
    # UUID GPU 2 would get, minor 3 and bus 02, device 3, function 1, domain 1;
    # GPUs 1-3 are synthesized around it.
    ("listed: kept; board id packs domain, bus, device and function", 0,
     "GPU-00000074-0000-0000-0000-000000000002", 3, "00000001:02:03.1", 0x10219),
    ("synthesized: index UUID and minor, first free bus 01", 1,
     "GPU-00000074-0000-0000-0000-000000000001", 1, "00000000:01:00.0", 0x100),
    ("synthesized: UUID taken, moved up 0x1000; bus 02 taken, 03", 2,
     "GPU-00000074-0000-0000-0000-000000001002", 2, "00000000:03:00.0", 0x300),
    ("synthesized: minor 3 taken, the next free one", 3,
     "GPU-00000074-0000-0000-0000-000000000003", 4, "00000000:04:00.0", 0x400),
]


@pytest.mark.parametrize("index, uuid, minor, bus_id, board_id", [c[1:] for c in IDENTITY_CASES],
                         ids=[c[0] for c in IDENTITY_CASES])
def test_identity_synthesis(index, uuid, minor, bus_id, board_id):
    listed = [{"index": 0, "uuid": "GPU-00000074-0000-0000-0000-000000000002", "minor_number": 3,
               "pci": {"bus_id": "0001:02:03.1"}}]
    gpu = comp.compile_profile(with_devices("t4", 4, listed))["gpus"][index]
    assert (gpu["uuid"], gpu["minor_number"], gpu["pci"]["bus_id"], gpu["board_id"]) == (
        uuid, minor, bus_id, board_id)


def with_infiniband(name, **block):
    doc = yaml.safe_load(load(name).text)
    doc["infiniband"] = block
    return parse(yaml.safe_dump(doc).encode(), source=f"{name}+ib")


HCA_CASES = [
    # id, infiniband block, HCAs of an 8-GPU h100
    ("one HCA per GPU by default", {"enabled": True}, 8),
    ("hcas_per_gpu: 1", {"enabled": True, "hcas_per_gpu": 1}, 8),
    ("hcas_per_gpu: 0 is the default, one per GPU", {"enabled": True, "hcas_per_gpu": 0}, 8),
    ("hcas_per_gpu: 2 doubles the HCAs", {"enabled": True, "hcas_per_gpu": 2}, 16),
    ("hca_count wins over hcas_per_gpu", {"enabled": True, "hcas_per_gpu": 2, "hca_count": 3}, 3),
    ("disabled: none, whatever the count", {"enabled": False, "hcas_per_gpu": 2, "hca_count": 3}, 0),
]


@pytest.mark.parametrize("block, hcas", [c[1:] for c in HCA_CASES], ids=[c[0] for c in HCA_CASES])
def test_hca_count(block, hcas):
    assert comp.compile_profile(with_infiniband("h100", **block))["infiniband"]["hca_count"] == hcas


def test_fewer_devices_than_listed_keeps_the_first():
    state = comp.compile_profile(with_count("h100", 4))
    assert [g["index"] for g in state["gpus"]] == [0, 1, 2, 3]


def test_topology_rewrites_fabric_identity_for_the_node():
    doc = {"version": 1, "domains": [{"name": "d", "uuid": "000000000000000000000000000000cd",
                                      "cliques": [{"id": 0, "nodes": ["w1"]},
                                                  {"id": 7, "nodes": ["w2"]}]}]}
    topology.validate(doc)
    state = comp.compile_profile(load("gb200"), doc, "w2")
    assert {g["fabric"]["clique_id"] for g in state["gpus"]} == {7}
    assert {g["fabric"]["cluster_uuid"] for g in state["gpus"]} == {
        "00000000-0000-0000-0000-0000000000cd"}
    # a node not in the document keeps the profile defaults
    other = comp.compile_profile(load("gb200"), doc, "w9")
    assert {g["fabric"]["clique_id"] for g in other["gpus"]} == {0}
    # a profile without fabric is not rewritten
    plain = comp.compile_profile(load("a100"), doc, "w2")
    assert all("fabric" not in g for g in plain["gpus"]) and plain["topology"] is None


def test_topology_document_rejects_a_node_in_two_cliques():
    doc = {"domains": [{"uuid": "u", "cliques": [{"id": 0, "nodes": ["a"]}, {"id": 1, "nodes": ["a"]}]}]}
    with pytest.raises(topology.TopologyError, match="node 'a' is also in"):
        topology.validate(doc)
