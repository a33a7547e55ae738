"""device_defaults merged into each device: the Go reference's rules, one row each."""

import pytest

from mokka.core.profile import merge_device, device_count, load
from mokka.core import names

DEFAULTS = {
    "name": "NVIDIA Test", "serial": "0", "brand": "nvidia", "architecture": "ampere",
    "pci": {"device_id": 0x20B010DE, "subsystem_id": 0x134F10DE},
    "platform": {"chassis_serial_number": "C1", "slot_number": 3, "module_id": 0},
    "memory": {"total_bytes": 100, "reserved_bytes": 10, "used_bytes": 0},
    "power": {"default_limit_mw": 400000, "max_limit_mw": 400000},
    "fabric": {"cluster_uuid": "x", "clique_id": 0, "state": "auto"},
    "compute_capability": {"major": 8, "minor": 0},
    "fan": {"count": 0},
    "mig": {"max_gpu_instances": 7},
}

CASES = [
    ("non-empty identity string overrides", {"name": "Other"}, "name", "Other"),
    ("empty identity string keeps the default", {"name": ""}, "name", "NVIDIA Test"),
    ("serial overrides", {"serial": "42"}, "serial", "42"),
    ("pci merges field by field: bus id added", {"pci": {"bus_id": "0000:07:00.0"}},
     "pci", {"device_id": 0x20B010DE, "subsystem_id": 0x134F10DE, "bus_id": "0000:07:00.0"}),
    ("pci merges field by field: one id replaced", {"pci": {"device_id": 1}},
     "pci", {"device_id": 1, "subsystem_id": 0x134F10DE}),
    ("platform merges field by field", {"platform": {"module_id": 5}},
     "platform", {"chassis_serial_number": "C1", "slot_number": 3, "module_id": 5}),
    ("memory replaces the block wholesale", {"memory": {"total_bytes": 50}},
     "memory", {"total_bytes": 50}),
    ("memory: null keeps the defaults", {"memory": None},
     "memory", {"total_bytes": 100, "reserved_bytes": 10, "used_bytes": 0}),
    ("fabric: null keeps the defaults", {"fabric": None},
     "fabric", {"cluster_uuid": "x", "clique_id": 0, "state": "auto"}),
    ("power replaces the block wholesale", {"power": {"current_draw_mw": 1}},
     "power", {"current_draw_mw": 1}),
    ("fabric replaces the block wholesale", {"fabric": {"clique_id": 9}}, "fabric", {"clique_id": 9}),
    ("processes replace the list", {"processes": [{"pid": 7}]}, "processes", [{"pid": 7}]),
    ("compute_capability in a device is ignored", {"compute_capability": {"major": 1}},
     "compute_capability", {"major": 8, "minor": 0}),
    ("fan in a device is ignored", {"fan": {"count": 3}}, "fan", {"count": 0}),
    ("mig in a device is ignored", {"mig": {"max_gpu_instances": 1}}, "mig", {"max_gpu_instances": 7}),
    ("per-device uuid is taken", {"uuid": "GPU-1"}, "uuid", "GPU-1"),
    ("per-device minor number is taken", {"minor_number": 3}, "minor_number", 3),
]


@pytest.mark.parametrize("entry,key,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_merge_rule(entry, key, expected):
    merged = merge_device(DEFAULTS, {"index": 0, **entry})
    assert merged[key] == expected


def test_merge_does_not_alias_defaults():
    a = merge_device(DEFAULTS, {"index": 0})
    a["memory"]["total_bytes"] = 1
    b = merge_device(DEFAULTS, {"index": 1})
    assert b["memory"]["total_bytes"] == 100


COUNT_CASES = [
    ("num_devices wins when positive", {"num_devices": 4}, [{}] * 8, 4),
    ("listed devices when num_devices is zero", {"num_devices": 0}, [{}] * 3, 3),
    ("listed devices when num_devices is absent", {}, [{}] * 2, 2),
    ("eight when nothing is listed", {}, [], 8),
]


@pytest.mark.parametrize("system,entries,expected", [c[1:] for c in COUNT_CASES],
                         ids=[c[0] for c in COUNT_CASES])
def test_device_count_rule(system, entries, expected):
    assert device_count(system, entries) == expected


@pytest.mark.parametrize("name", names.BUILTIN_PROFILES)
def test_builtin_profiles_load(name):
    p = load(name)
    assert p.count == len(p.devices) > 0
    assert [d["index"] for d in p.devices] == list(range(p.count))
    assert all(d["name"] == p.devices[0]["name"] for d in p.devices)


def test_default_profile_is_gb300():
    assert load("").source == names.DEFAULT_PROFILE == "gb300"
