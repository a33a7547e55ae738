"""A malformed profile is rejected with one line naming the file, the field and the fault."""

import copy
import json
import os

import pytest
import yaml

from mokka.core import names
from mokka.core.profile import ProfileError, load
from tests.conftest import run_mokka
from tests.corpus.minimal_profile import DEFAULTS, GPU, GPU_FIELDS

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
    ("moving memory above 100 %", mutate("device_defaults.dynamic_metrics", {"memory": {"used_max_pct": 101}}),
     "device_defaults.dynamic_metrics.memory.used_max_pct", "at most 100"),
    ("moving memory below 0 %", mutate("device_defaults.dynamic_metrics", {"memory": {"used_min_pct": -1}}),
     "device_defaults.dynamic_metrics.memory.used_min_pct", "at least 0"),
    ("moving memory in MiB", mutate("device_defaults.dynamic_metrics", {"memory": {"used_min_pct": "4GiB"}}),
     "device_defaults.dynamic_metrics.memory.used_min_pct", "must be an integer"),
    ("unknown moving memory pattern", mutate("device_defaults.dynamic_metrics", {"memory": {"pattern": "leak"}}),
     "device_defaults.dynamic_metrics.memory.pattern", "unknown pattern"),
    ("moving memory is a number", mutate("device_defaults.dynamic_metrics", {"memory": 50}),
     "device_defaults.dynamic_metrics.memory", "must be a mapping"),
]

# Hostile profiles, as users write them: one line naming file and field, never a traceback.
HEAD = 'version: "1.0"\nsystem:\n  driver_version: "550.1.1"\n'
BOMB = HEAD + "device_defaults:\n  mig:\n    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"    a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10))
NESTED = HEAD + "x: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n"
HOSTILE_CASES = [
    ("switch entry is a string", HEAD + "nvlink: {switches: [a]}\n", "nvlink.switches[0]",
     "must be a mapping, not a string"),
    ("nvlink links is a string", HEAD + "nvlink: {links: abc}\n", "nvlink.links", "must be a list"),
    ("device_links is a string", HEAD + "nvlink: {device_links: abc}\n", "nvlink.device_links",
     "must be a list"),
    ("device_links index is a word", HEAD + "nvlink: {device_links: [{index: x}]}\n",
     "nvlink.device_links[0].index", "must be an integer"),
    ("device index is empty", HEAD + "devices: [{index: null}, {index: 1}]\n", "devices[0].index",
     "is required"),
    ("fabric health is a list", HEAD + "device_defaults: {fabric: {health: [1]}}\n",
     "device_defaults.fabric.health", "must be a mapping"),
    ("platform is a list", HEAD + "device_defaults: {platform: [1]}\n", "device_defaults.platform",
     "must be a mapping"),
    ("platform is a string", HEAD + "device_defaults: {platform: abc}\n",
     "device_defaults.platform", "must be a mapping"),
    ("platform is an integer", HEAD + "device_defaults: {platform: 5}\n",
     "device_defaults.platform", "must be a mapping"),
    ("root complex devices is an integer",
     HEAD + "pcie_topology: {root_complexes: [{id: pci0000:00, devices: 5}]}\n",
     "pcie_topology.root_complexes[0].devices", "must be a list"),
    ("alias inside the node it names", HEAD + "device_defaults: &a {name: x, mig: *a}\n", "",
     "alias *a is inside the node it names (a cycle)"),
    ("10 000 nested mappings", NESTED, "", "nested deeper than 32 levels"),
    ("alias bomb of nine levels of ten", BOMB, "", "more than 100000 nodes with aliases expanded"),
    ("pci device id over 32 bits", HEAD + "device_defaults: {pci: {device_id: 0x1FFFFFFFF}}\n",
     "device_defaults.pci.device_id", "outside 0..0xFFFFFFFF"),
    ("pci device id negative", HEAD + "device_defaults: {pci: {device_id: -1}}\n",
     "device_defaults.pci.device_id", "outside 0..0xFFFFFFFF"),
    ("subsystem id over 32 bits as text",
     HEAD + "device_defaults: {pci: {subsystem_id: '0x100000000'}}\n",
     "device_defaults.pci.subsystem_id", "outside 0..0xFFFFFFFF"),
    ("root complex id with a trailing newline",
     HEAD + 'pcie_topology: {root_complexes: [{id: "pci0000:00\\n"}]}\n',
     "pcie_topology.root_complexes[0].id", "control characters"),
    ("uuid with a trailing newline",
     HEAD + 'devices: [{index: 0, uuid: "GPU-12345678-1234-1234-1234-123456780000\\n"}]\n',
     "devices[0].uuid", "control characters"),
    ("bus id with a trailing newline",
     HEAD + 'devices: [{index: 0, pci: {bus_id: "0000:07:00.0\\n"}}]\n',
     "devices[0].pci.bus_id", "control characters"),
    ("name with a trailing newline", HEAD + 'device_defaults: {name: "GPU\\n"}\n',
     "device_defaults.name", "control characters"),
    ("version is a list", 'version: [1]\nsystem: {driver_version: "550.1.1"}\n', "version",
     "must be a string, not a list"),
    ("version is a mapping", 'version: {a: 1}\nsystem: {driver_version: "550.1.1"}\n',
     "version", "must be a string, not a mapping"),
    ("name is an integer", HEAD + "device_defaults: {name: 5}\n", "device_defaults.name",
     "must be a string, not an integer (5); quote it"),
    ("memory as a float 1.0e+30", HEAD + "device_defaults: {memory: {total_bytes: 1.0e+30}}\n",
     "device_defaults.memory.total_bytes", "must be an integer, not a number"),
    ("memory as 1e30 (a string in YAML 1.1)",
     HEAD + "device_defaults: {memory: {total_bytes: 1e30}}\n",
     "device_defaults.memory.total_bytes", "must be an integer, not a string"),
    ("memory beyond 64 bits", HEAD + f"device_defaults: {{memory: {{total_bytes: {2**70}}}}}\n",
     "device_defaults.memory.total_bytes", "must be at most 9223372036854775807"),
    ("a set where a mapping goes", HEAD + "device_defaults: {mig: !!set {a}}\n", "",
     "the tag tag:yaml.org,2002:set is not allowed"),
    ("a list as a mapping key", HEAD + "device_defaults: {? [a]: 1}\n", "",
     "a mapping key must be a scalar"),
    ("failure probability not finite", HEAD + "device_defaults: {failure: {probability: .nan}}\n",
     "device_defaults.failure.probability", "finite number"),
    ("fabric clique id beyond 32 bits", HEAD + "device_defaults: {fabric: {clique_id: 4294967296}}\n",
     "device_defaults.fabric.clique_id", "at most 4294967295"),
    ("nvlink links per gpu beyond what NVML allows", HEAD + "nvlink: {links_per_gpu: 19}\n",
     "nvlink.links_per_gpu", "at most 18"),
    ("processes is a mapping", HEAD + "device_defaults: {processes: {a: 1}}\n",
     "device_defaults.processes", "must be a list"),
    ("a device entry is empty", HEAD + "devices: [null]\n", "devices[0]", "must be a mapping"),
    ("defaults copied into 64 GPUs beyond the compiled-state bound",
     'version: "1.0"\nsystem: {driver_version: "550.1.1", num_devices: 64}\n'
     "device_defaults: {future: [" + "0, " * 20_000 + "0]}\n",
     "device_defaults", "copied into 64 GPUs it makes 1300200 nodes; at most 1000000"),
    ("more than 64 device entries", HEAD + "devices: [" + ", ".join(
        f"{{index: {i}}}" for i in range(65)) + "]\n", "devices", "lists 65 entries; at most 64"),
    ("an unknown key with a newline", HEAD + 'device_defaults: {future: {"a\\nb": 1}}\n',
     "device_defaults.future", "key 'a\\nb' may not contain control characters"),
    ("an unknown value with a NUL", HEAD + 'devices: [{index: 0, dynamic_metrics: {"": "a\\0b"}}]\n',
     "devices[0].dynamic_metrics.", "'a\\x00b' may not contain a NUL"),
]
CASES += HOSTILE_CASES
# What every nvidia-smi prints, missing from every GPU once device_defaults is merged.
CASES += [
    ("a name of blanks", mutate("device_defaults.name", "  "), "devices[index=0].name",
     "GPU 0 has no name (2 of 2 GPUs have none), which nvidia-smi prints; set "
     "device_defaults.name, or name in each entry of devices"),
    ("no memory block", mutate("device_defaults.memory", ...), "devices[index=0].memory.total_bytes",
     "GPU 0 has no memory.total_bytes (2 of 2 GPUs have none), which nvidia-smi prints; set "
     "device_defaults.memory.total_bytes, or memory.total_bytes in each entry of devices"),
]

# Valid profiles the Go loader takes: accepted here too (a positive control per form).
VALID = [
    ("flow-style system", 'version: "1.0"\nsystem: {driver_version: 550.163.01}\n' + DEFAULTS),
    ("JSON", '{"version": "1.0", "system": {"driver_version": "550.163.01"}, '
             '"device_defaults": ' + json.dumps(GPU) + ', "devices": [{"index": 0}]}'),
    ("merge key", 'base: &s {driver_version: 550.163.01}\nversion: "1.0"\nsystem:\n  <<: *s\n' + DEFAULTS),
    ("unknown keys anywhere", HEAD + "future: {x: [1, {y: 2}]}\n"
     f"device_defaults: {{{GPU_FIELDS}, new_block: {{a: b}}}}\n"),
    ("keys that YAML 1.1 reads as non-strings",
     HEAD + f"device_defaults: {{{GPU_FIELDS}, new: {{1: a, yes: b, null: c}}}}\n"),
    ("a date where a string goes", 'version: 2001-12-14\nsystem: {driver_version: "550.1.1"}\n' + DEFAULTS),
    ("version as a number", 'version: 1.0\nsystem: {driver_version: "550.1.1"}\n' + DEFAULTS),
    ("nulls anywhere are fields left out",
     HEAD + "devices: [{index: 0, minor_number: null, uuid: null, grace_cpu_pair: null, "
     "pci: {bus_id: null, device_id: null}, name: null, memory: null, fabric: null}]\n"
     f"device_defaults: {{{GPU_FIELDS}, pci: null, platform: null, architecture: null}}\n"
     "nvlink: {switches: null, device_links: null}\ninfiniband: null\n"),
    ("pci ids as text",
     HEAD + f"device_defaults: {{{GPU_FIELDS}, pci: {{device_id: '0x20B010DE', subsystem_id: 0}}}}\n"),
]


@pytest.mark.parametrize("text", [v[1] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_forms_load(tmp_path, text):
    path = tmp_path / "good.yaml"
    path.write_text(text)
    assert load(str(path)).count >= 1


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


@pytest.mark.parametrize("name", names.BUILTIN_PROFILES)
def test_the_schema_declares_every_key_of_the_builtin_profiles(name):
    assert load(name).unknown == ()


def test_unknown_keys_are_named_not_refused(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + 'device_defaults: {name: "NVIDIA T4", shiny: 1, '
                    "memory: {total_bytes: 17179869184, extra: [1]}}\nnew_top: {}\n")
    assert load(str(path)).unknown == ("device_defaults.shiny", "device_defaults.memory.extra",
                                       "new_top")
