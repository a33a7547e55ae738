"""gpudriver's native files: the mock NVML library as a driver ships it, NVIDIA's
nvidia-smi instead of the Python launcher, and the CDI mount of the library."""

from __future__ import annotations

import os

import pytest
import yaml

from mokka.agent import desired as ds
from mokka.agent.hostfs import File, Link
from mokka.agent.native import NativeFiles
from mokka.agent.simulators import Host
from mokka.agent.simulators import cri, gpudriver
from mokka.core import profile as prof
from mokka.core.overlay import host_overlay

LIB = b"\x7fELF-the-library"
SMI = b"\x7fELF-nvidia-smi"


def host(tmp_path, native: NativeFiles) -> Host:
    return Host(root=str(tmp_path), overlay=host_overlay(str(tmp_path), "/var/lib/nvml-mock"),
                fs=None, cdi_dir=str(tmp_path / "var/run/cdi"), log=None, native=native)


def desired(name="h100"):
    _, text = prof.read(name)
    return ds.build(1, name, f"<builtin>/{name}.yaml", text)


def test_library_is_the_versioned_file_with_two_relative_links(tmp_path):
    tree = gpudriver.tree(desired("h100"), host(tmp_path, NativeFiles(nvml_library=LIB)))
    lib = tmp_path / "var/lib/nvml-mock/driver/usr/lib64"
    driver_version = desired("h100").state["system"]["driver_version"]
    assert tree[str(lib / f"libnvidia-ml.so.{driver_version}")] == File(LIB, 0o755)
    assert tree[str(lib / "libnvidia-ml.so.1")] == Link(f"libnvidia-ml.so.{driver_version}")
    assert tree[str(lib / "libnvidia-ml.so")] == Link("libnvidia-ml.so.1")
    assert str(tmp_path / "var/lib/nvml-mock/driver/usr/bin/nvidia-smi") not in tree


def test_without_a_library_nothing_is_staged_in_lib64(tmp_path):
    tree = gpudriver.tree(desired("t4"), host(tmp_path, NativeFiles()))
    assert not [p for p in tree if "/usr/lib64/" in p]


def test_nvidia_binary_replaces_only_the_python_nvidia_smi(tmp_path):
    h = host(tmp_path, NativeFiles(nvml_library=LIB, nvidia_smi=SMI))
    tree = gpudriver.tree(desired("t4"), h)
    assert tree[str(tmp_path / "var/lib/nvml-mock/driver/usr/bin/nvidia-smi")] == File(SMI, 0o755)
    assert gpudriver.launcher_commands(h) == ("check-fabric", "nvml-mock-ctl")
    assert gpudriver.launcher_commands(host(tmp_path, NativeFiles())) == ("nvidia-smi", "check-fabric",
                                                                     "nvml-mock-ctl")


@pytest.mark.parametrize("native, mounted", [(NativeFiles(nvml_library=LIB), True),
                                             (NativeFiles(), False)])
def test_toolkit_cdi_spec_mounts_the_library_only_when_staged(tmp_path, native, mounted):
    tree = cri.tree(desired("t4"), host(tmp_path, native))
    spec = yaml.safe_load(tree[os.path.join(str(tmp_path / "var/run/cdi"), "nvidia.yaml")].data)
    mounts = {m["containerPath"]: m["hostPath"] for m in spec["containerEdits"]["mounts"]}
    want = str(tmp_path / "var/lib/nvml-mock/driver/usr/lib64/libnvidia-ml.so.1")
    assert (mounts.get("/usr/lib64/libnvidia-ml.so.1") == want) is mounted


HOOK = b"\x7fELF-the-proc-hook"


@pytest.mark.parametrize("native, staged", [(NativeFiles(proc_hook=HOOK), True), (NativeFiles(), False)])
def test_the_proc_hook_is_staged_executable_only_when_built(tmp_path, native, staged):
    tree = gpudriver.tree(desired("t4"), host(tmp_path, native))
    path = str(tmp_path / "var/lib/nvml-mock/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook")
    assert (tree.get(path) == File(HOOK, 0o755)) is staged
    assert staged or not [p for p in tree if "/libexec/" in p]


def test_specs_name_the_nodes_paths_when_the_agent_sees_the_node_under_a_mount(tmp_path):
    # The chart's agent sees the node under /host; containerd reads the specs on the node.
    native = NativeFiles(nvml_library=LIB, proc_hook=HOOK)
    seen = host(tmp_path, native)
    pod = Host(root=seen.root, overlay=seen.overlay, fs=None, cdi_dir=seen.cdi_dir, log=None,
               native=native, runtime_overlay=host_overlay("/", "/var/lib/nvml-mock"))
    tree = cri.tree(desired("t4"), pod)
    for file in ("nvidia.yaml", "nvml-mock-nri.yaml", "nvml-mock-management.yaml"):
        text = tree[os.path.join(str(tmp_path / "var/run/cdi"), file)].data.decode()
        assert str(tmp_path) not in text, file
        spec = yaml.safe_load(text)
        (hook,) = spec["containerEdits"]["hooks"]
        assert hook["path"] == "/var/lib/nvml-mock/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook"
        assert hook["args"][1] == "/var/lib/nvml-mock"
    toolkit = yaml.safe_load(tree[os.path.join(str(tmp_path / "var/run/cdi"), "nvidia.yaml")].data)
    assert toolkit["containerEdits"]["deviceNodes"][0]["hostPath"] == "/var/lib/nvml-mock/driver/dev/nvidiactl"
