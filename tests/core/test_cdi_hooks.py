"""The proc hook in the CDI specs: a container given a GPU by CDI alone (no NRI plugin, or a
runtime resolving the name itself) runs the same hook the NRI adjustment adds, and a spec's
createContainer hooks reach a container on a runtime that cannot take CDI names."""

import pytest

from mokka.core import cdi
from mokka.core.compile import compile_profile
from mokka.core.edits import Hook
from mokka.core.overlay import host_overlay
from mokka.core.profile import load
from mokka.nri.inject import Config, Container, NodeView, Pod, adjust
from tests.integration.cdischema import validate_cdi_spec
from tests.integration.runtime import runtime_paths

HOOK_PATH = "/scratch/var/lib/nvml-mock/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook"
HOOK_ENTRY = {"hookName": "createContainer", "path": HOOK_PATH,
              "args": ["nvml-mock-proc-hook", "/scratch/var/lib/nvml-mock"], "timeout": 5}


@pytest.fixture(scope="module")
def state():
    return compile_profile(load("t4"))


@pytest.fixture(scope="module")
def host():
    return host_overlay("/scratch")


def test_every_spec_carries_the_hook_where_it_is_staged(state, host):
    specs = cdi.specs(state, host, proc_hook_staged=True)
    for spec in (*specs.values(), cdi.management_spec(state, host, proc_hook_staged=True)):
        assert spec["containerEdits"]["hooks"] == [HOOK_ENTRY], spec["kind"]


def test_no_spec_names_a_hook_that_is_not_staged(state, host):
    specs = cdi.specs(state, host)
    for spec in (*specs.values(), cdi.management_spec(state, host)):
        assert "hooks" not in spec.get("containerEdits", {}), spec["kind"]


@pytest.mark.parametrize("staged", [True, False], ids=["hook staged", "no hook"])
def test_no_spec_aims_libmockfs_at_the_nodes_whole_pci_tree(state, host, staged):
    """A container given GPUs by a spec reads /sys as the hook gives it (only its GPUs):
    no spec preloads libmockfs or sets its root, which would show it every GPU."""
    specs = cdi.specs(state, host, proc_hook_staged=staged)
    for spec in (*specs.values(), cdi.management_spec(state, host, proc_hook_staged=staged)):
        edits = [spec.get("containerEdits", {})] + [d["containerEdits"] for d in spec["devices"]]
        keys = {entry.split("=", 1)[0] for e in edits for entry in e.get("env", [])}
        assert keys & {"LD_PRELOAD", "MOCK_PCI_ROOT"} == set(), spec["kind"]
        assert "libmockfs" not in repr(spec), spec["kind"]


def test_specs_with_the_hook_validate_against_the_cdi_schema(state, host):
    paths = runtime_paths()
    if paths is None:
        pytest.skip("CDI JSON schema not fetched: run .ci/fetch-runtime.sh (CI does)")
    for spec in (*cdi.specs(state, host, proc_hook_staged=True).values(),
                 cdi.management_spec(state, host, proc_hook_staged=True)):
        validate_cdi_spec(spec, paths.cdi_schema_dir)


def test_reading_keeps_create_container_hooks_and_skips_the_rest():
    doc = {"cdiVersion": "0.5.0", "kind": "example.com/gpu",
           "containerEdits": {"hooks": [
               {"hookName": "createContainer", "path": "/usr/bin/helper", "args": ["helper", "-v"],
                "env": ["A=1"], "timeout": 3},
               {"hookName": "prestart", "path": "/usr/bin/old"},
               {"hookName": "createContainer", "path": "relative/helper"},
               {"hookName": "createContainer", "path": "/usr/bin/bad", "args": ["ok", 7]},
               {"hookName": "createContainer", "path": "/usr/bin/untimed", "timeout": 0},
               "not a hook"]},
           "devices": [{"name": "0", "containerEdits": {"env": ["X=1"]}}]}
    (common, _own) = cdi.device_edits(doc)["example.com/gpu=0"]
    assert common.hooks == (Hook("/usr/bin/helper", ("helper", "-v"), ("A=1",), 3),
                            Hook("/usr/bin/untimed", (), (), None))


def test_a_runtime_without_cdi_gets_the_specs_hook_once_beside_the_plugins_own(state):
    host = host_overlay("/")
    spec = cdi.mock_spec(state, host, proc_hook_staged=True)
    view = NodeView(cdi_edits=cdi.device_edits(spec), cdi_spec_staged=True, proc_hook_staged=True,
                    runtime_accepts_cdi=False)
    config = Config(device_injection_mode="cdi")
    pod = Pod(namespace="default", name="p", annotations={"nvml-mock.nvidia.com/devices": "true"})
    decision = adjust(config, pod, Container(name="c"), view)
    assert decision.adjustment is not None, decision.reason
    assert decision.adjustment.hooks == (
        Hook("/var/lib/nvml-mock/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook",
             ("nvml-mock-proc-hook", "/var/lib/nvml-mock"), (), 5),)


def test_a_foreign_specs_hook_is_delivered_with_its_edits():
    doc = {"cdiVersion": "0.5.0", "kind": "example.com/gpu",
           "containerEdits": {"hooks": [{"hookName": "createContainer", "path": "/opt/x/helper"}]},
           "devices": [{"name": "all", "containerEdits": {"env": ["X=1"]}}]}
    view = NodeView(cdi_edits=cdi.device_edits(doc), cdi_spec_staged=True, runtime_accepts_cdi=False)
    config = Config(device_injection_mode="cdi", cdi_device_name="example.com/gpu=all")
    pod = Pod(namespace="default", name="p", annotations={"nvml-mock.nvidia.com/devices": "true"})
    decision = adjust(config, pod, Container(name="c"), view)
    assert decision.adjustment.hooks == (Hook("/opt/x/helper"),)
