"""Fabric ``state: auto`` inside a container the NRI plugin injected, in a real containerd:
NVIDIA's nvidia-smi there finds the fabricmanager state dir through the overlay mount
(no MOCK_FABRICMANAGER_STATE_DIR in the container contract) and reads IN_PROGRESS while
``mokka fabricmanager`` initializes, COMPLETED once its marker exists."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from mokka.core import names
from tests.integration.nodes import mokka_env, native_node
from tests.integration.nodes import GLIBC_IMAGE as IMAGE
from tests.integration.nriplugin import PluginProcess, make
from tests.integration.pods import exec_sync, start_container
from tests.peers import peer
from tests.waiting import wait_until

PROFILE = "gb300"


@pytest.fixture(scope="module")
def fabric_node(tmp_path_factory):
    with native_node(tmp_path_factory, "fabric-node", PROFILE, "--nvidia-smi", peer("NVIDIA_SMI")) as node:
        yield node


def fabricmanager(state_dir: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mokka", "fabricmanager", "--state-dir", state_dir,
                             "--log-level", "error", *args], env=mokka_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def fabric_states(cri, cid) -> list:
    result = exec_sync(cri, cid, ["nvidia-smi", "-q"])
    assert result.exit_code == 0, result
    lines = result.stdout.splitlines()
    return [lines[i + 1].split(":")[1].strip() for i, line in enumerate(lines) if line.strip() == "Fabric"]


def test_auto_follows_the_marker_inside_an_injected_container(glibc_containerd, zipapp, fabric_node):
    root, overlay = fabric_node
    procs = []
    plugin = PluginProcess(zipapp, glibc_containerd.nri_socket, overlay, root).start()
    try:
        procs.append(fabricmanager(overlay.fabric_state, "--delay", "600"))
        wait_until(lambda: os.path.isdir(overlay.fabric_state), what="the state dir")
        cri = glibc_containerd.client()
        _, cid, _ = make(cri, "fabric", {names.ANNOTATION_DEVICES: "true"}, image=IMAGE)
        start_container(cri, cid)
        env = exec_sync(cri, cid, ["env"]).stdout
        assert names.ENV_FABRICMANAGER_STATE_DIR not in env
        assert fabric_states(cri, cid) == ["In Progress"] * 8
        procs[0].send_signal(signal.SIGTERM)
        assert procs[0].wait(20) == 0
        procs.append(fabricmanager(overlay.fabric_state))
        wait_until(lambda: os.path.exists(overlay.fabric_ready), what="the marker")
        assert fabric_states(cri, cid) == ["Completed"] * 8
    finally:
        for p in procs:
            p.kill()
        plugin.stop()
        shutil.rmtree(overlay.fabric_state, ignore_errors=True)
