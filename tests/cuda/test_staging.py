"""How the agent stages the mock CUDA driver: libcuda.so.<driver version> with the
soname and development links beside the NVML library, the process records' directory
(01777), and the toolkit CDI spec mounting the driver beside NVML's and the records
writable over the read-only config."""

from __future__ import annotations

import os
import stat

import yaml

from mokka.agent.hostfs import File, Link
from mokka.agent.native import NativeFiles
from mokka.agent.simulators import cri, gpudriver
from tests.agent.test_native_tree import desired, host
from tests.native.staged import nvml_build, staged_node  # noqa: F401  (fixtures)

NVML = b"\x7fELF-nvml"
CUDA = b"\x7fELF-cuda"


def test_the_driver_is_staged_as_a_driver_ships_it(tmp_path):
    tree = gpudriver.tree(desired("h100"), host(tmp_path, NativeFiles(nvml_library=NVML, cuda_library=CUDA)))
    lib = tmp_path / "var/lib/nvml-mock/driver/usr/lib64"
    assert tree[str(lib / "libcuda.so.550.163.01")] == File(CUDA, 0o755)
    assert tree[str(lib / "libcuda.so.1")] == Link("libcuda.so.550.163.01")
    assert tree[str(lib / "libcuda.so")] == Link("libcuda.so.1")
    assert tree[str(lib / "libnvidia-ml.so.1")] == Link("libnvidia-ml.so.550.163.01")


def test_the_cdi_spec_mounts_the_driver_beside_nvml_and_the_records_writable(tmp_path):
    native = NativeFiles(nvml_library=NVML, cuda_library=CUDA)
    tree = cri.tree(desired("t4"), host(tmp_path, native))
    spec = yaml.safe_load(tree[os.path.join(str(tmp_path / "var/run/cdi"), "nvidia.yaml")].data)
    mounts = {m["containerPath"]: (m["hostPath"], m["options"][0]) for m in spec["containerEdits"]["mounts"]}
    config = str(tmp_path / "var/lib/nvml-mock/driver/config")
    assert mounts["/usr/lib64/libcuda.so.1"] == (str(tmp_path / "var/lib/nvml-mock/driver/usr/lib64/libcuda.so.1"),
                                                 "ro")
    assert mounts["/etc/nvml-mock"] == (config, "ro")
    assert mounts["/etc/nvml-mock/processes"] == (os.path.join(config, "processes"), "rw")
    order = [m["containerPath"] for m in spec["containerEdits"]["mounts"]]
    assert order.index("/etc/nvml-mock") < order.index("/etc/nvml-mock/processes")   # the rw one on top


def test_without_the_driver_the_spec_names_none_of_it(tmp_path):
    tree = cri.tree(desired("t4"), host(tmp_path, NativeFiles(nvml_library=NVML)))
    spec = yaml.safe_load(tree[os.path.join(str(tmp_path / "var/run/cdi"), "nvidia.yaml")].data)
    paths = [m["containerPath"] for m in spec["containerEdits"]["mounts"]]
    assert "/usr/lib64/libcuda.so.1" not in paths and "/etc/nvml-mock/processes" not in paths


def test_a_staged_node_has_the_driver_and_the_records_directory(staged_node):
    node = staged_node("t4", nvidia_smi=False)
    lib = node.overlay.lib
    assert os.readlink(os.path.join(lib, "libcuda.so.1")) == "libcuda.so.550.163.01"
    with open(os.path.join(lib, "libcuda.so.550.163.01"), "rb") as f:
        assert f.read(4) == b"\x7fELF"
    records = node.overlay.process_records
    assert stat.S_IMODE(os.stat(records).st_mode) == 0o1777

