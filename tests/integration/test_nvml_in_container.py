"""NVIDIA's nvidia-smi inside a real containerd container whose image has glibc
but no Python (Debian's libc6 and busybox-static): the NRI plugin gives it the
overlay, and the staged binary loads the mock NVML library through its RUNPATH.
"""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from mokka.core.overlay import Overlay
from tests.compiled import state_of
from tests.integration.nodes import GLIBC_IMAGE, native_node
from tests.integration.nriplugin import make, plugin_for
from tests.integration.pods import exec_sync, start_container
from tests.peers import peer

IMAGE = GLIBC_IMAGE
PROFILE = "t4"


@pytest.fixture(scope="module")
def nvml_node(tmp_path_factory):
    """A t4 node staged with NVIDIA's nvidia-smi and the mock library."""
    with native_node(tmp_path_factory, "nvml-node", PROFILE, "--nvidia-smi", peer("NVIDIA_SMI")) as node:
        yield node


@pytest.fixture
def plugin(glibc_containerd, zipapp, nvml_node):
    with plugin_for(glibc_containerd, zipapp, nvml_node) as started:
        yield started


def uuids(node_overlay: Overlay) -> list[str]:
    return [g["uuid"] for g in state_of(node_overlay.profile)["gpus"]]


def test_no_python_image_lists_every_gpu(glibc_containerd, plugin, nvml_node):
    _, overlay = nvml_node
    cri = glibc_containerd.client()
    _, cid, _ = make(cri, "glibc-all", {names.ANNOTATION_DEVICES: "true"}, image=IMAGE)
    start_container(cri, cid)
    assert exec_sync(cri, cid, ["sh", "-c", "command -v python3"]).exit_code != 0
    result = exec_sync(cri, cid, ["nvidia-smi", "-L"])
    assert result.exit_code == 0, result
    want = [f"GPU {i}: NVIDIA T4 (UUID: {u})" for i, u in enumerate(uuids(overlay))]
    assert result.stdout.splitlines() == want
    assert len(want) == 4


def test_a_container_given_only_nvidia2_lists_only_that_gpu(glibc_containerd, plugin, nvml_node):
    _, overlay = nvml_node
    cri = glibc_containerd.client()
    # What a device plugin's DeviceSpecs give: one node.
    _, cid, _ = make(cri, "glibc-one", {names.ANNOTATION_DEVICES: "true"}, image=IMAGE,
                     devices=[{"host_path": overlay.gpu_node(2), "container_path": "/dev/nvidia2",
                               "permissions": "rw"}])
    start_container(cri, cid)
    result = exec_sync(cri, cid, ["nvidia-smi", "-L"])
    assert result.exit_code == 0, result
    assert result.stdout.splitlines() == [f"GPU 0: NVIDIA T4 (UUID: {uuids(overlay)[2]})"]
