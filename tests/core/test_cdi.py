"""CDI specs: valid against the CDI JSON schema, and every name maps to the right nodes."""

import pytest
import yaml

from mokka.core import cdi, names
from mokka.core.compile import compile_profile
from mokka.core.edits import Device, Mount
from mokka.core.mig import MigDevice
from mokka.core.overlay import host_overlay
from mokka.core.profile import load, parse
from tests.conftest import run_mokka
from tests.integration.cdischema import validate_cdi_spec
from tests.integration.runtime import runtime_paths


def rendered(profile, host_root="/"):
    state = compile_profile(load(profile))
    return state, cdi.specs(state, host_overlay(host_root))


@pytest.fixture(scope="module")
def schema_dir():
    paths = runtime_paths()
    if paths is None:
        pytest.skip("CDI JSON schema not fetched: run .ci/fetch-runtime.sh (CI does)")
    return paths.cdi_schema_dir


@pytest.mark.parametrize("profile", names.BUILTIN_PROFILES)
def test_specs_validate_against_the_cdi_schema(profile, schema_dir):
    result = run_mokka("render-cdi", "--profile", profile, check=True)
    docs = list(yaml.safe_load_all(result.stdout))
    assert [d["kind"] for d in docs] == [names.CDI_KIND_GPU, names.CDI_KIND_MOCK]
    for doc in docs:
        validate_cdi_spec(doc, schema_dir)
    state = compile_profile(load(profile))
    validate_cdi_spec(cdi.management_spec(state, host_overlay("/")), schema_dir)


def test_schema_check_rejects_a_broken_spec(schema_dir):
    """Positive control: the validator does fail on a spec with a wrong type."""
    import jsonschema
    _, specs = rendered("t4")
    broken = dict(specs[names.CDI_SPEC_GPU_FILE], devices="all")
    with pytest.raises(jsonschema.ValidationError):
        validate_cdi_spec(broken, schema_dir)


def nodes_of(spec, device_name):
    device = next(d for d in spec["devices"] if d["name"] == device_name)
    return [n["path"] for n in device["containerEdits"]["deviceNodes"]]


@pytest.mark.parametrize("profile", names.BUILTIN_PROFILES)
def test_every_device_name_maps_to_its_gpu_nodes(profile):
    state, specs = rendered(profile)
    toolkit = specs[names.CDI_SPEC_GPU_FILE]
    mock = specs[names.CDI_SPEC_MOCK_FILE]
    every = [f"/dev/nvidia{g['minor_number']}" for g in state["gpus"]]
    for gpu in state["gpus"]:
        own = [f"/dev/nvidia{gpu['minor_number']}"]
        assert nodes_of(toolkit, str(gpu["index"])) == own
        assert nodes_of(toolkit, gpu["uuid"]) == own
        assert nodes_of(mock, str(gpu["index"])) == own
    assert nodes_of(toolkit, "all") == every
    assert nodes_of(mock, "all") == every + ["/dev/nvidiactl", "/dev/nvidia-modeset", "/dev/nvidia-uvm",
                                             "/dev/nvidia-uvm-tools",
                                             "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia-caps/nvidia-cap2"]
    control = [n["path"] for n in toolkit["containerEdits"]["deviceNodes"]]
    assert control == ["/dev/nvidiactl", "/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert len(toolkit["devices"]) == 2 * state["gpu_count"] + 1


def test_specs_name_only_staged_host_paths_under_the_host_root():
    _, specs = rendered("gb300", host_root="/scratch/node")
    toolkit = specs[names.CDI_SPEC_GPU_FILE]
    host_paths = [m["hostPath"] for m in toolkit["containerEdits"]["mounts"]]
    host_paths += [n["hostPath"] for d in toolkit["devices"] for n in d["containerEdits"]["deviceNodes"]]
    assert all(p.startswith("/scratch/node/var/lib/nvml-mock/driver/") for p in host_paths)
    assert "hooks" not in toolkit["containerEdits"]            # we ship no nvidia-cdi-hook
    assert not any(m["containerPath"] == names.CDI_NVML_LIB_MOUNT
                   for m in toolkit["containerEdits"]["mounts"])   # no library staged yet
    env = toolkit["containerEdits"]["env"]
    assert f"{names.ENV_NVML_CONFIG}={names.CDI_CONFIG_MOUNT}/{names.PROFILE_FILE}" in env
    assert f"{names.ENV_NVIDIA_VISIBLE_DEVICES}=void" in env


def test_library_mount_appears_once_a_library_is_staged():
    state = compile_profile(load("a100"))
    spec = cdi.toolkit_spec(state, host_overlay("/"), nvml_library_staged=True)
    assert spec["containerEdits"]["mounts"][0]["containerPath"] == names.CDI_NVML_LIB_MOUNT


@pytest.mark.parametrize("nvml, cuda, mounted", [
    (False, False, []), (False, True, []), (True, False, ["/usr/lib64/libnvidia-ml.so.1"]),
    (True, True, ["/usr/lib64/libnvidia-ml.so.1", "/usr/lib64/libcuda.so.1",
                  "/etc/nvml-mock/processes"])])
def test_the_cuda_driver_and_its_records_come_only_with_the_nvml_library_it_reads(nvml, cuda, mounted):
    edits = cdi.toolkit_edits(host_overlay("/"), nvml_library_staged=nvml, cuda_library_staged=cuda)
    paths = [m["containerPath"] for m in edits["mounts"]]
    assert [p for p in paths if "lib" in p.split("/")[-1] or p.endswith("/processes")] == mounted
    # A CUDA process records itself: the one writable mount, the rest read-only.
    writable = [m["containerPath"] for m in edits["mounts"] if "rw" in m["options"]]
    assert writable == (["/etc/nvml-mock/processes"] if nvml and cuda else [])


def test_without_a_word_of_the_cuda_driver_the_spec_names_only_the_nvml_library():
    edits = cdi.toolkit_edits(host_overlay("/"), nvml_library_staged=True)
    assert [m["containerPath"] for m in edits["mounts"]][:2] == ["/usr/lib64/libnvidia-ml.so.1", "/usr/bin/nvidia-smi"]


def test_render_cdi_out_writes_both_files(tmp_path):
    result = run_mokka("render-cdi", "--profile", "t4", "--out", str(tmp_path), check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [names.CDI_SPEC_GPU_FILE, names.CDI_SPEC_MOCK_FILE])
    assert result.stdout.split() == [str(tmp_path / names.CDI_SPEC_GPU_FILE),
                                     str(tmp_path / names.CDI_SPEC_MOCK_FILE)]
    doc = yaml.safe_load((tmp_path / names.CDI_SPEC_MOCK_FILE).read_text())
    assert doc["kind"] == names.CDI_KIND_MOCK


def test_a_profile_whose_minors_differ_from_its_indices_names_devices_by_index():
    doc = yaml.safe_load(load("t4").text)
    for entry, minor in zip(doc["devices"], (13, 12, 11, 10)):
        entry["minor_number"] = minor
    state = compile_profile(parse(yaml.safe_dump(doc).encode(), source="t4-minors"))
    specs = cdi.specs(state, host_overlay("/node"))
    toolkit, mock = specs["nvidia.yaml"], specs["nvml-mock-nri.yaml"]
    assert [d["name"] for d in mock["devices"]] == ["0", "1", "2", "3", "all"]
    assert [d["name"] for d in toolkit["devices"]] == [
        "0", "GPU-00000074-0000-0000-0000-000000000000", "1", "GPU-00000074-0000-0000-0000-000000000001",
        "2", "GPU-00000074-0000-0000-0000-000000000002", "3", "GPU-00000074-0000-0000-0000-000000000003",
        "all"]
    for spec in (toolkit, mock):
        assert nodes_of(spec, "0") == ["/dev/nvidia13"]
        assert nodes_of(spec, "3") == ["/dev/nvidia10"]


def test_device_nodes_are_character_devices_opened_read_write():
    state = compile_profile(load("t4"))
    specs = cdi.specs(state, host_overlay("/node"))
    toolkit = specs["nvidia.yaml"]
    assert toolkit["devices"][0]["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/nvidia0", "hostPath": "/node/var/lib/nvml-mock/driver/dev/nvidia0",
         "type": "c", "major": 195, "minor": 0, "permissions": "rw"}]
    assert toolkit["containerEdits"]["deviceNodes"][0] == {
        "path": "/dev/nvidiactl", "hostPath": "/node/var/lib/nvml-mock/driver/dev/nvidiactl",
        "type": "c", "major": 195, "minor": 255, "permissions": "rw"}
    every = [n for spec in (*specs.values(), cdi.management_spec(state, host_overlay("/node")))
             for d in [*spec["devices"], spec] for n in (d.get("containerEdits") or {}).get("deviceNodes", [])]
    # toolkit: by index, by UUID, all, four control nodes; mock: by index, all + control + the
    # MIG config and monitor capabilities; management: all + control + those two
    assert len(every) == (4 + 4 + 4 + 4) + (4 + 10) + 10
    assert {n["permissions"] for n in every} == {"rw"}


MIG_DEVICES = [MigDevice(0, 0, 0, "MIG-11111111-1111-1111-1111-111111111111", 1, 0),
               MigDevice(3, 5, 2, "MIG-22222222-2222-2222-2222-222222222222", 7, 1)]


def test_mig_devices_are_named_as_the_toolkit_names_them(schema_dir):
    spec = cdi.mig_spec(MIG_DEVICES, host_overlay("/node"), nvml_library_staged=True)
    validate_cdi_spec(spec, schema_dir)
    assert spec["kind"] == names.CDI_KIND_GPU
    assert [d["name"] for d in spec["devices"]] == [
        "0:0", "MIG-11111111-1111-1111-1111-111111111111", "3:2", "MIG-22222222-2222-2222-2222-222222222222"]
    # gpu5/gi7 is 3 + 135*5 + 9*7 = 741, its ci1 741 + 1 + 1.
    assert spec["devices"][2]["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/nvidia5", "hostPath": "/node/var/lib/nvml-mock/driver/dev/nvidia5",
         "type": "c", "major": 195, "minor": 5, "permissions": "rw"},
        {"path": "/dev/nvidia-caps/nvidia-cap741",
         "hostPath": "/node/var/lib/nvml-mock/driver/dev/nvidia-caps/nvidia-cap741",
         "type": "c", "major": 236, "minor": 741, "permissions": "rw"},
        {"path": "/dev/nvidia-caps/nvidia-cap743",
         "hostPath": "/node/var/lib/nvml-mock/driver/dev/nvidia-caps/nvidia-cap743",
         "type": "c", "major": 236, "minor": 743, "permissions": "rw"}]
    toolkit = cdi.toolkit_spec(compile_profile(load("a100")), host_overlay("/node"), nvml_library_staged=True)
    assert spec["containerEdits"] == toolkit["containerEdits"]


# --- reading: what a runtime without CDI support gets of a spec ----------------------

def test_what_the_writer_writes_the_reader_reads_back():
    state = compile_profile(load("t4"))
    edits = cdi.device_edits(cdi.mock_spec(state, host_overlay("/node")))
    assert list(edits) == [f"nvml-mock.nvidia.com/gpu={n}" for n in ("0", "1", "2", "3", "all")]
    common, own = edits["nvml-mock.nvidia.com/gpu=3"]
    assert common == cdi.CDIEdits(env=("NVML_MOCK_DEVICE_SOURCE=cdi",))
    assert own == cdi.CDIEdits(devices=(Device("/dev/nvidia3", "c", 195, 3),))
    assert [(d.path, d.major, d.minor) for d in edits["nvml-mock.nvidia.com/gpu=all"][1].devices] == [
        ("/dev/nvidia0", 195, 0), ("/dev/nvidia1", 195, 1), ("/dev/nvidia2", 195, 2),
        ("/dev/nvidia3", 195, 3), ("/dev/nvidiactl", 195, 255), ("/dev/nvidia-modeset", 195, 254),
        ("/dev/nvidia-uvm", 510, 0),
        ("/dev/nvidia-uvm-tools", 510, 1), ("/dev/nvidia-caps/nvidia-cap1", 236, 1),
        ("/dev/nvidia-caps/nvidia-cap2", 236, 2)]


def test_the_toolkit_specs_common_edits_come_with_every_device():
    state = compile_profile(load("t4"))
    spec = cdi.toolkit_spec(state, host_overlay("/node"), fabricmanager_state_dir="/run/fm")
    common, own = cdi.device_edits(spec)["nvidia.com/gpu=GPU-00000074-0000-0000-0000-000000000002"]
    assert common.env == ("NVIDIA_VISIBLE_DEVICES=void", "MOCK_NVML_CONFIG=/etc/nvml-mock/config.yaml",
                          "MOCK_NVML_OVERRIDES=/etc/nvml-mock/overrides",
                          "MOCK_FABRICMANAGER_STATE_DIR=/run/fm")
    assert [(m.destination, m.source, m.type, m.options) for m in common.mounts] == [
        ("/usr/bin/nvidia-smi", "/node/var/lib/nvml-mock/driver/usr/bin/nvidia-smi", "bind",
         ("ro", "nosuid", "nodev", "bind")),
        ("/usr/lib/mokka", "/node/var/lib/nvml-mock/driver/usr/lib/mokka", "bind",
         ("ro", "nosuid", "nodev", "bind")),
        ("/etc/nvml-mock", "/node/var/lib/nvml-mock/driver/config", "bind",
         ("ro", "nosuid", "nodev", "bind")),
        ("/run/fm", "/run/fm", "bind", ("ro", "nosuid", "nodev", "bind"))]
    assert [d.path for d in common.devices] == ["/dev/nvidiactl", "/dev/nvidia-modeset",
                                                "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert own.devices == (Device("/dev/nvidia2", "c", 195, 2),)


@pytest.mark.parametrize("doc", [
    None, [], "kind: x", {"devices": [{"name": "a"}]}, {"kind": 7, "devices": [{"name": "a"}]},
], ids=["empty file", "a list", "a string", "no kind", "kind not a string"])
def test_a_document_that_is_no_spec_defines_no_device(doc):
    assert cdi.device_edits(doc) == {}


def test_entries_that_are_not_edits_are_skipped_and_the_rest_kept():
    doc = {"kind": "example.com/x", "containerEdits": "not a mapping", "devices": [
        "not a device", {"name": 3}, {"name": "empty"}, {"name": "none", "containerEdits": None},
        {"name": "mixed", "containerEdits": {
            "env": ["A=1", "no-equals", 5, "B="],
            "deviceNodes": [{"path": "/dev/x", "type": "c", "major": 1, "minor": 2, "fileMode": 0o640,
                             "uid": 7, "gid": 8},
                            {"path": "/dev/bool", "type": "c", "major": True, "minor": 0,
                             "hostPath": "/nonexistent/bool"},
                            {"type": "c", "major": 1, "minor": 3}, "not a node",
                            {"path": "/dev/strnum", "type": "c", "major": "1", "minor": 2}],
            "mounts": [{"hostPath": "/h", "containerPath": "/c"},
                       {"hostPath": "/h2", "containerPath": "/c2", "type": "tmpfs",
                        "options": ["ro", 1, "nosuid"]},
                       {"hostPath": "/h3", "containerPath": "/c3", "type": ""},
                       {"hostPath": "/h4", "containerPath": "/c4", "type": 5},
                       {"hostPath": "/h"}, {"containerPath": "/c"}, [], "m"]}}]}
    edits = cdi.device_edits(doc)
    assert list(edits) == ["example.com/x=empty", "example.com/x=none", "example.com/x=mixed"]
    assert edits["example.com/x=empty"] == () and edits["example.com/x=none"] == ()
    with pytest.raises(AttributeError):               # a value, shared by every view
        edits["example.com/x=mixed"][0].env = ()
    (mixed,) = edits["example.com/x=mixed"]
    assert mixed.env == ("A=1", "B=")
    assert mixed.devices == (Device("/dev/x", "c", 1, 2, 0o640, 7, 8),)
    assert mixed.mounts == (Mount("/c", "/h", "bind", ()),
                            Mount("/c2", "/h2", "tmpfs", ("ro", "nosuid")),
                            Mount("/c3", "/h3", "bind", ()),
                            Mount("/c4", "/h4", "bind", ()))


def test_a_node_without_numbers_is_completed_from_its_host_path_or_dropped(tmp_path):
    import os
    import stat
    char, block, plain = tmp_path / "char", tmp_path / "block", tmp_path / "plain"
    try:
        os.mknod(char, stat.S_IFCHR | 0o620, os.makedev(195, 7))
        os.mknod(block, stat.S_IFBLK | 0o600, os.makedev(8, 1))
    except PermissionError:
        pytest.skip("mknod not permitted")
    os.chmod(char, 0o620)                    # not as the umask left it
    plain.write_text("")
    doc = {"kind": "example.com/x", "devices": [{"name": "d", "containerEdits": {"deviceNodes": [
        {"path": "/dev/c", "hostPath": str(char)},
        {"path": "/dev/c-typed", "hostPath": str(char), "type": "b", "fileMode": 0o444},
        {"path": str(block)},
        {"path": "/dev/plain", "hostPath": str(plain)},
        {"path": "/dev/missing", "hostPath": str(tmp_path / "missing")},
        {"path": "/dev/half", "hostPath": str(char), "type": "c", "major": 3},
        {"path": "/dev/untyped", "hostPath": str(char), "major": 1, "minor": 1}]}}]}
    (edits,) = cdi.device_edits(doc)["example.com/x=d"]
    assert edits.devices == (Device("/dev/c", "c", 195, 7, 0o620),
                             Device("/dev/c-typed", "b", 195, 7, 0o444),
                             Device(str(block), "b", 8, 1, 0o600),
                             Device("/dev/half", "c", 195, 7, 0o620),
                             Device("/dev/untyped", "c", 195, 7, 0o620))


def test_a_spec_file_is_read_as_yaml_or_json_and_a_bad_one_named(tmp_path):
    (tmp_path / "a.json").write_text('{"kind": "example.com/x", "devices": [{"name": "j", '
                                     '"containerEdits": {"env": ["J=1"]}}]}')
    (tmp_path / "b.yaml").write_text("kind: example.com/x\ndevices:\n- name: y\n"
                                     "  containerEdits: {env: [Y=1]}\n")
    (tmp_path / "c.yaml").write_text("kind: [unclosed\n")
    assert cdi.read_spec(str(tmp_path / "a.json")) == {
        "example.com/x=j": (cdi.CDIEdits(env=("J=1",)),)}
    assert cdi.read_spec(str(tmp_path / "b.yaml")) == {
        "example.com/x=y": (cdi.CDIEdits(env=("Y=1",)),)}
    for bad in ("c.yaml", "missing.yaml"):
        with pytest.raises(cdi.UnreadableSpec):
            cdi.read_spec(str(tmp_path / bad))
    assert cdi.SPEC_SUFFIXES == (".yaml", ".yml", ".json")


def test_imex_channels_join_the_toolkit_specs_common_nodes():
    state = compile_profile(load("t4"))
    channel = {"path": "/dev/nvidia-caps-imex-channels/channel0", "type": "c", "major": 234,
               "minor": 0, "permissions": "rw"}
    spec = cdi.toolkit_spec(state, host_overlay("/node"), imex_nodes=[channel])
    assert [n["path"] for n in spec["containerEdits"]["deviceNodes"]] == [
        "/dev/nvidiactl", "/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
        "/dev/nvidia-caps-imex-channels/channel0"]


def test_specs_are_written_as_block_yaml_without_anchors():
    node = {"path": "/dev/x"}
    text = cdi.to_yaml({"kind": "example.com/x", "devices": [
        {"name": "a", "containerEdits": {"deviceNodes": [node]}},
        {"name": "b", "containerEdits": {"deviceNodes": [node]}}]})
    assert text == ("kind: example.com/x\ndevices:\n"
                    "- name: a\n  containerEdits:\n    deviceNodes:\n    - path: /dev/x\n"
                    "- name: b\n  containerEdits:\n    deviceNodes:\n    - path: /dev/x\n")
