"""Monitoring tools render every GPU over the staged mock library: gpustat and
nvitop (through nvidia-ml-py), and nvtop (Debian bookworm's, a C program that
dlopens libnvidia-ml.so), driven in a private tmux server.

They find the library the way a container given the overlay does
(LD_LIBRARY_PATH at the overlay's lib64) and the profile with no
MOCK_NVML_CONFIG, from the library's own place in the overlay.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.compiled import state_of
from tests.native.staged import nvml_build, staged_node  # noqa: F401 (fixtures)

from mokka.core import names
from tests.peers import peer

PROFILES = ["h100", "t4", "gb200"]


@pytest.fixture(scope="module", params=PROFILES)
def node(request, staged_node):
    return staged_node(request.param, nvidia_smi=False)


def gpus_of(node) -> list[dict]:
    return state_of(node.config)["gpus"]


def lib_env(node) -> dict:
    return node.env(LD_LIBRARY_PATH=node.overlay.lib)


def test_gpustat_json_lists_every_gpu(node):
    done = subprocess.run([sys.executable, "-m", "gpustat", "--json"], capture_output=True, text=True,
                          env=lib_env(node), timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)["gpus"]
    gpus = gpus_of(node)
    assert [(g["index"], g["uuid"], g["name"]) for g in seen] == \
        [(g["index"], g["uuid"], g["name"]) for g in gpus]
    for row, gpu in zip(seen, gpus):
        assert row["memory.total"] == gpu["memory"]["total_bytes"] // (1 << 20)


def test_nvitop_once_renders_every_gpu(node):
    done = subprocess.run([sys.executable, "-m", "nvitop", "-1", "--ascii"], capture_output=True, text=True,
                          env=dict(lib_env(node), COLUMNS="160", LINES="200"), timeout=60)
    assert done.returncode == 0, done.stderr
    state = state_of(node.config)
    assert f"Driver Version: {state['system']['driver_version']}" in done.stdout, done.stdout
    for gpu in state["gpus"]:
        assert gpu["pci"]["bus_id"][4:] in done.stdout, gpu["pci"]["bus_id"]
    assert "ERR!" not in done.stdout


def test_nvtop_shows_every_gpu(node, tmp_path):
    nvtop, tmux = peer("NVTOP"), peer("TMUX")
    socket = str(tmp_path / "tmux.sock")
    env = dict(lib_env(node), TERM="xterm-256color", HOME=str(tmp_path))
    gpus = gpus_of(node)
    subprocess.run([tmux, "-S", socket, "new-session", "-d", "-x", "220", "-y", "80",
                    nvtop], env=env, check=True)
    try:
        deadline = time.monotonic() + 20
        screen = ""
        while time.monotonic() < deadline:
            screen = subprocess.run([tmux, "-S", socket, "capture-pane", "-p"], env=env,
                                    capture_output=True, text=True).stdout
            if all(f"Device {g['index']} [{g['name']}]" in screen for g in gpus):
                break
            time.sleep(0.2)
        assert "No GPU to monitor" not in screen, screen
        for gpu in gpus:
            assert f"Device {gpu['index']} [{gpu['name']}]" in screen, screen
    finally:
        subprocess.run([tmux, "-S", socket, "kill-server"], env=env, capture_output=True)
