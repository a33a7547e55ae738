"""A malformed profile is rejected with one line naming the file, the field and the fault."""

import copy
import os

import pytest
import yaml

from mokka.core.profile import ProfileError, load
from tests.conftest import run_mokka

BASE = {
    "version": "1.0",
    "system": {"driver_version": "550.163.01", "cuda_version": "12.4"},
    "device_defaults": {
        "name": "NVIDIA Test GPU", "architecture": "ampere",
        "memory": {"total_bytes": 1000, "reserved_bytes": 100},
        "pci": {"device_id": 0x20B010DE},
    },
    "devices": [
        {"index": 0, "uuid": "GPU-12345678-1234-1234-1234-123456780000",
         "pci": {"bus_id": "0000:07:00.0"}},
        {"index": 1, "uuid": "GPU-12345678-1234-1234-1234-123456780001",
         "pci": {"bus_id": "0000:0F:00.0"}},
    ],
}


def mutate(path, value):
    """BASE with the dotted/indexed ``path`` set to ``value`` (``...`` deletes it)."""
    doc = copy.deepcopy(BASE)
    keys = path.split(".")
    node = doc
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is ...:
        del node[last]
    else:
        node[last] = value
    return yaml.safe_dump(doc)


# (rule, YAML text, field path in the message, words in the message)
CASES = [
    ("YAML syntax error", "version: '1.0'\nsystem: [unclosed\n", "", "invalid YAML: line"),
    ("document is not a mapping", "- a\n- b\n", "", "must be a mapping"),
    ("version missing", mutate("version", ...), "version", "is required"),
    ("driver version missing", mutate("system.driver_version", ...), "system.driver_version",
     "is required"),
    ("driver version malformed", mutate("system.driver_version", "five"), "system.driver_version",
     "not a version"),
    ("system is a list", mutate("system", ["x"]), "system", "must be a mapping"),
    ("negative device count", mutate("system.num_devices", -1), "system.num_devices",
     "at least 0"),
    ("too many devices", mutate("system.num_devices", 65), "system.num_devices", "at most 64"),
    ("count is a string", mutate("system.num_devices", "eight"), "system.num_devices",
     "must be an integer"),
    ("duplicate index", mutate("devices.1", {"index": 0}), "devices[1].index", "duplicate index 0"),
    ("index missing", mutate("devices.1", {"uuid": "GPU-12345678-1234-1234-1234-123456780009"}),
     "devices[1].index", "is required"),
    ("unknown architecture", mutate("device_defaults.architecture", "quantum"),
     "device_defaults.architecture", "unknown architecture"),
    ("reserved memory above total", mutate("device_defaults.memory.reserved_bytes", 5000),
     "device_defaults.memory.reserved_bytes", "exceeds total_bytes"),
    ("memory of the wrong type", mutate("device_defaults.memory.total_bytes", "lots"),
     "device_defaults.memory.total_bytes", "must be an integer"),
    ("device name escapes a directory", mutate("device_defaults.name", "../../etc/passwd"),
     "device_defaults.name", "may not contain '/'"),
    ("bus id escapes a directory", mutate("devices.0", {"index": 0, "pci": {"bus_id": "../../x"}}),
     "devices[0].pci.bus_id", "not a PCI address"),
    ("uuid malformed", mutate("devices.0", {"index": 0, "uuid": "GPU-../x"}), "devices[0].uuid",
     "not a GPU UUID"),
    ("duplicate bus id", mutate("devices.1", {"index": 1, "pci": {"bus_id": "0000:07:00.0"}}),
     "devices[1].pci.bus_id", "duplicate bus id"),
    ("device index beyond the listed count", mutate("devices.1", {"index": 5}), "devices",
     "outside the device count"),
    ("unknown failure mode", mutate("device_defaults.failure", {"mode": "melted"}),
     "device_defaults.failure.mode", "unknown mode"),
    ("failure probability above one", mutate("device_defaults.failure", {"probability": 2}),
     "device_defaults.failure.probability", "[0, 1]"),
    ("unknown fabric state", mutate("device_defaults.fabric", {"state": "sleepy"}),
     "device_defaults.fabric.state", "unknown state"),
    ("pci device id not a number", mutate("device_defaults.pci", {"device_id": "abc"}),
     "device_defaults.pci.device_id", "not a number"),
    ("negative links per gpu", mutate("nvlink", {"links_per_gpu": -2}), "nvlink.links_per_gpu",
     "at least 0"),
    ("devices is a mapping", mutate("devices", {"a": 1}), "devices", "must be a list"),
]


@pytest.mark.parametrize("text,field,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_profile_is_one_precise_line(tmp_path, text, field, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as err:
        load(str(path))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    if field:
        assert f": {field}: " in message
    assert words in message


def test_base_profile_is_valid(tmp_path):
    """Positive control: the unmutated base loads."""
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert load(str(path)).count == 2


def test_unknown_profile_name_lists_the_builtins():
    with pytest.raises(ProfileError) as err:
        load("v100")
    assert "a100, h100, b200, gb200, gb300, l40s, t4" in str(err.value)


def test_missing_profile_file_is_one_line():
    with pytest.raises(ProfileError, match="cannot read the profile"):
        load("/nonexistent/profile.yaml")


def test_render_cdi_writes_nothing_on_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(mutate("version", ...))
    out = tmp_path / "out"
    out.mkdir()
    result = run_mokka("render-cdi", "--profile", str(bad), "--out", str(out))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("render-cdi: ") and "version: is required" in result.stderr
    assert os.listdir(out) == []
