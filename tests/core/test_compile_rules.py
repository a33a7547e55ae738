"""What compilation decides, rule by rule, on small edits of the t4 profile:
PCI ids, root complexes, NVLink, fabric, the system block and the byte form."""

from __future__ import annotations

import json

import pytest
import yaml

from mokka.core import compile as comp
from mokka.core.profile import load, parse


def compiled(edit, base: str = "t4", **kwargs) -> dict:
    """The compiled state of ``base`` after ``edit(doc)`` changed its document."""
    doc = yaml.safe_load(load(base).text)
    edit(doc)
    return comp.compile_profile(parse(yaml.safe_dump(doc).encode(), source=f"{base}-edited"),
                                **kwargs)


def set_in(doc: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for key in parents:
        doc = doc.setdefault(key, {})
    doc[last] = value


def without(doc: dict, path: str) -> None:
    *parents, last = path.split(".")
    for key in parents:
        doc = doc[key]
    doc.pop(last, None)


# --- PCI identity -----------------------------------------------------------------

PCI_CASES = [
    # id, device_id, subsystem_id -> (device_id, vendor_id, pci_device, subsystem_vendor, subsystem_device)
    ("an NVIDIA id splits into vendor and device", 0x1EB810DE, 0x12A210DE,
     (0x1EB810DE, 0x10DE, 0x1EB8, 0x10DE, 0x12A2)),
    ("another vendor's id keeps its vendor", 0x56781234, 0x9ABC4321,
     (0x56781234, 0x1234, 0x5678, 0x4321, 0x9ABC)),
    ("no ids: device 0, NVIDIA's vendor, no subsystem", None, None, (0, 0x10DE, 0, 0, 0)),
]


@pytest.mark.parametrize("device_id, subsystem_id, expected", [c[1:] for c in PCI_CASES],
                         ids=[c[0] for c in PCI_CASES])
def test_pci_ids(device_id, subsystem_id, expected):
    def edit(doc):
        for key, value in (("device_id", device_id), ("subsystem_id", subsystem_id)):
            if value is None:
                without(doc, f"device_defaults.pci.{key}")
            else:
                set_in(doc, f"device_defaults.pci.{key}", value)
    pci = compiled(edit)["gpus"][2]["pci"]
    assert (pci["device_id"], pci["vendor_id"], pci["pci_device"], pci["subsystem_vendor"],
            pci["subsystem_device"]) == expected
    assert pci["subsystem_id"] == (subsystem_id or 0)


def test_the_link_generations_follow_max_link_gen_unless_the_profile_gives_them():
    gpu = compiled(lambda d: set_in(d, "device_defaults.pcie.max_host_link_gen", 2))["gpus"][0]["pcie"]
    assert (gpu["max_link_gen"], gpu["gpu_max_link_gen"], gpu["max_host_link_gen"]) == (3, 3, 2)
    gpu = compiled(lambda d: without(d, "device_defaults.pcie.max_link_gen"))["gpus"][0]["pcie"]
    assert [k for k in ("max_link_gen", "gpu_max_link_gen", "max_host_link_gen") if k in gpu] == []
    assert gpu["current_link_gen"] == 3


def strip_uuids(doc):
    for entry in doc["devices"]:
        entry.pop("uuid", None)


def test_without_any_uuid_they_derive_from_the_first_gpus_name():
    state = compiled(strip_uuids)
    assert [g["uuid"] for g in state["gpus"]] == [
        f"GPU-d2e08637-acb5-cff7-8f2b-{n:012x}" for n in range(4)]     # sha256("NVIDIA T4")

    def named_apart(doc):
        strip_uuids(doc)
        doc["devices"][1]["name"] = "NVIDIA T4 (second)"
    # Only GPU 0's name counts: the others keep the same template.
    assert [g["uuid"] for g in compiled(named_apart)["gpus"]] == [
        g["uuid"] for g in state["gpus"]]


# --- root complexes ---------------------------------------------------------------

#: The GPUs are 3b, 86, af and d8: listed two by two, not as round-robin would place them.
TWO_ROOTS = [
    {"id": "pci0000:00", "numa_node": 0, "cpu_affinity": "0-39",
     "devices": ["0000:3B:00.0", "0000:86:00.0"]},
    {"id": "pci0000:80", "numa_node": 1, "cpu_affinity": "40-79",
     "devices": ["0000:AF:00.0", "0000:D8:00.0"]},
]


def test_gpus_sit_under_the_root_complex_that_lists_them():
    state = compiled(lambda doc: set_in(doc, "pcie_topology.root_complexes", TWO_ROOTS))
    assert [(g["root_complex"], g["numa_node"], g["cpu_affinity"]) for g in state["gpus"]] == [
        ("pci0000:00", 0, "0-39"), ("pci0000:00", 0, "0-39"),
        ("pci0000:80", 1, "40-79"), ("pci0000:80", 1, "40-79")]
    assert state["pcie_topology"]["cores_per_numa"] == 40


def test_unlisted_gpus_go_round_robin_and_missing_fields_take_defaults():
    roots = [{"id": "pci0000:00", "cpu_affinity": "0-39"}, {"id": "pci0000:80", "numa_node": 1}]
    state = compiled(lambda doc: set_in(doc, "pcie_topology.root_complexes", roots))
    assert [(g["root_complex"], g["numa_node"], g["cpu_affinity"]) for g in state["gpus"]] == [
        ("pci0000:00", 0, "0-39"), ("pci0000:80", 1, ""), ("pci0000:00", 0, "0-39"),
        ("pci0000:80", 1, "")]
    assert [r["devices"] for r in state["pcie_topology"]["root_complexes"]] == [
        ["0000:3b:00.0", "0000:af:00.0"], ["0000:86:00.0", "0000:d8:00.0"]]


def test_without_a_topology_one_root_complex_holds_every_gpu():
    state = compiled(lambda doc: doc.pop("pcie_topology"))
    assert state["pcie_topology"] == {"cores_per_numa": None, "root_complexes": [
        {"id": "pci0000:00", "numa_node": 0, "cpu_affinity": "",
         "devices": ["0000:3b:00.0", "0000:86:00.0", "0000:af:00.0", "0000:d8:00.0"]}]}


# --- NVLink ----------------------------------------------------------------------

SWITCHES = [{"bdf": "0000:01:00.0", "uuid": "NVSwitch-0"}, {"bdf": "0000:02:00.0", "uuid": "NVSwitch-1"}]


def test_nvlink_block_and_synthesized_links():
    state = compiled(lambda doc: doc.update(nvlink={
        "version": 4, "links_per_gpu": 3, "bandwidth_per_link_mbps": 25000, "c2c_enabled": True,
        "switches": SWITCHES, "defaults": {"state": "inactive"}}))
    assert state["nvlink"] == {"version": 4, "links_per_gpu": 3, "bandwidth_per_link_mbps": 25000,
                               "c2c_enabled": True, "switches": [
                                   {"bdf": "0000:01:00.0", "uuid": "NVSwitch-0"},
                                   {"bdf": "0000:02:00.0", "uuid": "NVSwitch-1"}]}
    assert state["gpus"][1]["nvlink_links"] == [
        {"link": 0, "state": "inactive", "remote_device_type": "switch",
         "remote_pci_bus_id": "0000:01:00.0", "remote_index": 0},
        {"link": 1, "state": "inactive", "remote_device_type": "switch",
         "remote_pci_bus_id": "0000:02:00.0", "remote_index": 1},
        {"link": 2, "state": "inactive", "remote_device_type": "switch",
         "remote_pci_bus_id": "0000:01:00.0", "remote_index": 0}]


def test_an_nvlink_block_without_numbers_reads_zero():
    state = compiled(lambda doc: doc.update(nvlink={"switches": SWITCHES}))
    assert state["nvlink"] == {"version": 0, "links_per_gpu": 0, "bandwidth_per_link_mbps": 0,
                               "c2c_enabled": False, "switches": state["nvlink"]["switches"]}
    assert all(g["nvlink_links"] == [] for g in state["gpus"])


def test_explicit_links_win_for_the_gpus_they_name():
    explicit = [{"index": 2, "links": [{"state": "inactive", "remote_pci_bus_id": "0000:09:00.0"},
                                       {"link": 7, "remote_device_type": "gpu", "remote_index": 3}]}]
    state = compiled(lambda doc: doc.update(nvlink={
        "links_per_gpu": 1, "switches": SWITCHES, "device_links": explicit}))
    assert state["gpus"][2]["nvlink_links"] == [
        {"link": 0, "state": "inactive", "remote_device_type": "switch",
         "remote_pci_bus_id": "0000:09:00.0", "remote_index": 0},
        {"link": 7, "state": "active", "remote_device_type": "gpu", "remote_pci_bus_id": "",
         "remote_index": 3}]
    assert state["gpus"][1]["nvlink_links"] == [
        {"link": 0, "state": "active", "remote_device_type": "switch",
         "remote_pci_bus_id": "0000:01:00.0", "remote_index": 0}]


def test_a_top_level_link_list_belongs_to_gpu_0():
    state = compiled(lambda doc: doc.update(nvlink={"links": [{"remote_index": 1}]}))
    assert [len(g["nvlink_links"]) for g in state["gpus"]] == [1, 0, 0, 0]
    assert state["gpus"][0]["nvlink_links"][0]["remote_index"] == 1


# --- fabric ----------------------------------------------------------------------

FABRIC_CASES = [
    # id, the profile's fabric block -> the compiled one (without "health")
    ("empty: completed, clique 0, health auto", {},
     {"cluster_uuid": "", "clique_id": 0, "state": "completed", "health_summary": "auto"}),
    ("given values are kept, lower-cased", {"cluster_uuid": "0000000000000000000000000000ABCD",
                                            "clique_id": 5, "state": "In_Progress",
                                            "health_summary": "Healthy"},
     {"cluster_uuid": "00000000-0000-0000-0000-00000000abcd", "clique_id": 5,
      "state": "in_progress", "health_summary": "healthy"}),
]


@pytest.mark.parametrize("block, expected", [c[1:] for c in FABRIC_CASES],
                         ids=[c[0] for c in FABRIC_CASES])
def test_fabric_block(block, expected):
    fabric = compiled(lambda doc: set_in(doc, "device_defaults.fabric", dict(block)))["gpus"][0]["fabric"]
    assert {k: fabric[k] for k in expected} == expected
    assert fabric["health"] == {}


def test_fabric_health_is_carried():
    health = {"bandwidth": "full", "route_recovery": "false"}
    fabric = compiled(lambda doc: set_in(doc, "device_defaults.fabric", {"health": health}))[
        "gpus"][3]["fabric"]
    assert fabric["health"] == health


@pytest.mark.parametrize("value, expected", [
    ("0000000000000000000000000000ABCD", "00000000-0000-0000-0000-00000000abcd"),
    ("00000000-0000-0000-0000-00000000abcd", "00000000-0000-0000-0000-00000000abcd"),
    (" 0000000000000000000000000000abcd ", "00000000-0000-0000-0000-00000000abcd"),
    ("abc", "abc"),
    ("z" * 32, "z" * 32),
    (None, ""),
], ids=["32 hex digits", "already dashed", "spaces around", "too short: as given",
        "32 characters, not hex: as given", "none"])
def test_cluster_uuid_normalization(value, expected):
    assert comp.normalize_cluster_uuid(value) == expected


# --- the system block, the node and the byte form ---------------------------------

def test_the_system_block_is_copied_as_strings():
    state = compiled(lambda doc: doc["system"].update(
        driver_version="560.1", nvml_version="12.560.1", cuda_version="12.6"))
    assert state["system"] == {"driver_version": "560.1", "nvml_version": "12.560.1",
                               "cuda_version": "12.6", "cuda_version_major": 12,
                               "cuda_version_minor": 4,
                               "kernel_modules": ["nvidia", "nvidia_modeset", "nvidia_uvm"]}
    bare = compiled(lambda doc: [doc["system"].pop(k) for k in ("nvml_version", "cuda_version")])
    assert (bare["system"]["nvml_version"], bare["system"]["cuda_version"]) == ("", "")


def test_a_node_name_without_a_topology_changes_nothing_but_the_name():
    state = compiled(lambda doc: None, node_name="w2")
    assert state["node_name"] == "w2" and state["topology"] is None


def test_the_byte_form_is_ascii_sorted_and_one_space_indented():
    state = compiled(lambda doc: set_in(doc, "device_defaults.name", "NVIDIA T4 \u00fc"))
    text = comp.dumps(state)
    assert text.isascii() and '"name": "NVIDIA T4 \\u00fc"' in text
    assert text.startswith('{\n "generator": "mokka ') and '\n "gpu_count": 4,\n' in text
    assert text.endswith('\n "topology": null\n}\n')
    assert json.loads(text) == json.loads(json.dumps(state))


# --- InfiniBand ----------------------------------------------------------------------

def test_infiniband_defaults_fill_what_the_block_leaves_out():
    ib = compiled(lambda doc: doc.update(infiniband={"enabled": True, "rate_gbps": None}))["infiniband"]
    assert ib == {"enabled": True, "hca_type": "MT4129", "fw_version": "28.39.2048", "hw_rev": "0x0",
                  "board_id": "MT_0000000838", "node_desc_template": "{node_name} mlx5_{idx}",
                  "link_layer": "InfiniBand", "rate_gbps": 400, "port_state": "ACTIVE",
                  "phys_state": "LinkUp", "hcas_per_gpu": 1, "hca_count": 4,
                  "guid_prefix": "a088c20300ab"}


def test_infiniband_is_off_unless_the_profile_turns_it_on():
    for block in ({}, {"hca_type": "MT4123"}):
        ib = compiled(lambda doc: doc.update(infiniband=dict(block)))["infiniband"]
        assert (ib["enabled"], ib["hca_count"]) == (False, 0)
    assert compiled(lambda doc: doc.pop("infiniband"))["infiniband"]["enabled"] is False


def test_the_top_level_link_list_gives_way_to_gpu_0s_own():
    state = compiled(lambda doc: doc.update(nvlink={
        "links": [{"remote_index": 1}], "device_links": [{"index": 0, "links": [{"remote_index": 5},
                                                                              {"remote_index": 6}]}]}))
    assert [link["remote_index"] for link in state["gpus"][0]["nvlink_links"]] == [5, 6]
