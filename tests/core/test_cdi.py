"""CDI specs: valid against the CDI JSON schema, and every name maps to the right nodes."""

import pytest
import yaml

from mokka.core import cdi, names
from mokka.core.compile import compile_profile
from mokka.core.overlay import host_overlay
from mokka.core.profile import load, parse
from tests.conftest import run_mokka
from tests.integration.runtime import runtime_paths, validate_cdi_spec


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
    assert nodes_of(mock, "all") == every + ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    control = [n["path"] for n in toolkit["containerEdits"]["deviceNodes"]]
    assert control == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
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
    # toolkit: by index, by UUID, all, control; mock: by index, all + control; management: all + control
    assert len(every) == (4 + 4 + 4 + 3) + (4 + 7) + 7
    assert {n["permissions"] for n in every} == {"rw"}
