"""A C program of the driver API, built here with the machine's compiler against PyPI's
cuda.h (never committed) and linked with -lcuda against the staged driver: on the host
over a staged node, and in the real containerd 1.7.24 in an image with glibc and no
Python, given only /dev/nvidia2 as a device plugin's DeviceSpecs give it: one CUDA
device, GPU 2's UUID."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from mokka.core import names
from tests.compiled import state_of
from tests.integration.conftest import (container_support, containerd, containerd_factory,  # noqa: F401
                                        cri_api, glibc_containerd, runtime)
from tests.integration.nodes import GLIBC_IMAGE, native_node
from tests.integration.nriplugin import PluginProcess, make
from tests.integration.pods import exec_sync, start_container
from tests.nativelibs import build_module
from tests.native.staged import nvml_build, staged_node  # noqa: F401  (fixtures)

HERE = os.path.dirname(os.path.abspath(__file__))


def build(lib_dir: str, out_dir: str) -> str:
    """The program, linked against the staged libcuda.so; its path."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler on this machine (apt-get install gcc)")
    header_dir = os.path.dirname(build_module().cuda_header())
    out = os.path.join(out_dir, "cuda_probe")
    done = subprocess.run([cc, "-O1", "-Wall", "-I", header_dir, os.path.join(HERE, "c", "cuda_probe.c"),
                           "-L", lib_dir, "-lcuda", "-o", out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def expected(uuids, name: str) -> list[str]:
    return [f"device {i} {name} {u}" for i, u in enumerate(uuids)]


def test_the_program_runs_over_a_staged_node(staged_node, tmp_path):
    node = staged_node("t4", nvidia_smi=False)
    program = build(node.overlay.lib, str(tmp_path))
    env = node.env(**{names.ENV_LD_LIBRARY_PATH: node.overlay.lib})
    env.pop(names.ENV_CUDA_VISIBLE_DEVICES, None)
    done = subprocess.run([program], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    uuids = [g["uuid"] for g in state_of(node.overlay.profile)["gpus"]]
    assert done.stdout.splitlines() == ["driver 12040 devices 4", *expected(uuids, "NVIDIA T4"), "round trip ok"]


@pytest.fixture(scope="module")
def t4_node(tmp_path_factory):
    with native_node(tmp_path_factory, "cuda-node", "t4") as node:
        yield node


def test_a_container_given_only_nvidia2_sees_one_device_gpu_2(glibc_containerd, zipapp, t4_node, tmp_path):
    root, overlay = t4_node
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    build(overlay.lib, str(probe_dir))
    plugin = PluginProcess(zipapp, glibc_containerd.nri_socket, overlay, root).start()
    try:
        cri = glibc_containerd.client()
        _, cid, _ = make(cri, "cuda-one", {names.ANNOTATION_DEVICES: "true"}, image=GLIBC_IMAGE,
                         devices=[{"host_path": overlay.gpu_node(2), "container_path": "/dev/nvidia2",
                                   "permissions": "rw"}],
                         mounts=[{"container_path": "/probe", "host_path": str(probe_dir), "readonly": True}])
        start_container(cri, cid)
        assert exec_sync(cri, cid, ["sh", "-c", "command -v python3"]).exit_code != 0
        result = exec_sync(cri, cid, ["/probe/cuda_probe"], timeout=60)
    finally:
        plugin.stop()
    assert result.exit_code == 0, result
    gpu2 = state_of(overlay.profile)["gpus"][2]["uuid"]
    assert result.stdout.splitlines() == ["driver 12040 devices 1", f"device 0 NVIDIA T4 {gpu2}", "round trip ok"]
