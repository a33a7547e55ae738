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
    assert len({g["board_id"] for g in state["gpus"]}) == p.count
    assert all(g["board_id"] > 0 for g in state["gpus"])


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


def test_synthesizes_up_to_64_gpus_deterministically():
    a = comp.compile_profile(with_count("gb300", 64))
    b = comp.compile_profile(with_count("gb300", 64))
    assert comp.dumps(a) == comp.dumps(b)
    gpus = a["gpus"]
    assert len(gpus) == 64
    assert len({g["uuid"] for g in gpus}) == 64
    assert len({g["pci"]["bus_id"] for g in gpus}) == 64
    assert sorted(g["minor_number"] for g in gpus) == list(range(64))
    # the listed eight keep their profile identity
    listed = load("gb300").devices
    assert [g["uuid"] for g in gpus[:8]] == [d["uuid"] for d in listed]
    # every synthesized GPU is placed under a root complex
    placed = {bdf for r in a["pcie_topology"]["root_complexes"] for bdf in r["devices"]}
    assert {g["pci"]["bdf"] for g in gpus} <= placed


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
