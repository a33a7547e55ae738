"""InfiniBand in a real containerd container (glibc image, no IB packages): the
NRI plugin gives a pod with the infiniband annotation the overlay, its IB env
and the shims; bookworm's ibstat and ibv_devinfo, staged by the agent with
their libraries, run from the overlay and see the profile's HCAs. A pod without
the annotation sees none."""

from __future__ import annotations


import pytest

from mokka.core import names
from tests.integration.nodes import GLIBC_IMAGE, native_node
from tests.integration.nriplugin import PluginProcess, make, plugin_for
from tests.integration.pods import exec_sync, start_container
from tests.peers import peer

IMAGE = GLIBC_IMAGE
PROFILE = "h100"
HCAS = [f"mlx5_{i}" for i in range(8)]


@pytest.fixture(scope="module")
def ib_node(tmp_path_factory):
    """An h100 node staged with the shims and bookworm's IB tools."""
    with native_node(tmp_path_factory, "ib-node", PROFILE, "--node-name", "node-c",
                     "--ib-tools", peer("IB_ROOT")) as node:
        yield node


@pytest.fixture
def plugin(glibc_containerd, zipapp, ib_node):
    with plugin_for(glibc_containerd, zipapp, ib_node) as started:
        yield started


def run_in(containerd, name: str, annotations: dict, cmd: list[str]):
    cri = containerd.client()
    _, cid, _ = make(cri, name, annotations, image=IMAGE)
    start_container(cri, cid)
    return exec_sync(cri, cid, cmd)


def test_infiniband_pod_runs_ibstat_from_the_overlay_and_sees_the_hcas(glibc_containerd, plugin):
    result = run_in(glibc_containerd, "ib", {names.ANNOTATION_INFINIBAND: "true"}, ["ibstat", "-l"])
    assert result.exit_code == 0, result
    assert result.stdout.splitlines() == HCAS


def test_infiniband_pod_sees_port_active_through_verbs(glibc_containerd, plugin):
    result = run_in(glibc_containerd, "ib-verbs", {names.ANNOTATION_INFINIBAND: "true"},
                    ["ibv_devinfo", "-d", "mlx5_3"])
    assert result.exit_code == 0, result
    assert "PORT_ACTIVE (4)" in result.stdout


def test_pod_without_the_annotation_sees_no_hca(glibc_containerd, plugin):
    # Given GPUs but not InfiniBand: the overlay and its tools are there, MOCK_IB=off.
    result = run_in(glibc_containerd, "gpu-only", {names.ANNOTATION_DEVICES: "true"},
                    ["ibstat", "-l"])
    assert (result.exit_code, result.stdout) == (0, "")
    # Not selected at all: left as authored, no overlay, no tools.
    result = run_in(glibc_containerd, "plain", {},
                    ["sh", "-c", f"ls {names.OVERLAY_MOUNT_PATH} || echo absent"])
    assert "absent" in result.stdout


def test_the_sysfs_tier_gives_paths_but_not_verbs(glibc_containerd, zipapp, ib_node):
    """nri-plugin --infiniband-tier sysfs (the chart's infiniband.mockTier=sysfs): ibstat
    reads the mock sysfs; the verbs shim stays off, so ibv_devinfo finds no device."""
    root, overlay = ib_node
    started = PluginProcess(zipapp, glibc_containerd.nri_socket, overlay, root,
                            "--infiniband-tier", "sysfs").start()
    try:
        listed = run_in(glibc_containerd, "ib-sysfs", {names.ANNOTATION_INFINIBAND: "true"}, ["ibstat", "-l"])
        assert (listed.exit_code, listed.stdout.splitlines()) == (0, HCAS), listed
        verbs = run_in(glibc_containerd, "ib-sysfs-verbs", {names.ANNOTATION_INFINIBAND: "true"},
                       ["ibv_devinfo", "-d", "mlx5_3"])
        assert verbs.exit_code != 0 and "PORT_ACTIVE" not in verbs.stdout, verbs
        env = run_in(glibc_containerd, "ib-sysfs-env", {names.ANNOTATION_INFINIBAND: "true"}, ["env"])
        assert "MOCK_IB=sysfs" in env.stdout.splitlines()
    finally:
        started.stop()
