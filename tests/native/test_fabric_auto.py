"""Fabric ``state: auto`` on an agent-staged node follows ``mokka fabricmanager``'s marker,
found beside the driver root's config with no MOCK_FABRICMANAGER_STATE_DIR: through NVIDIA's
nvidia-smi over the mock library, our Python nvidia-smi, and pynvml."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

from mokka.core import names
from tests.native.conftest import run_probe
from tests.native.staged import clean_env, nvml_build, staged_node  # noqa: F401 (fixtures)
from tests.conftest import REPO
from tests.waiting import wait_until


def fabric_states(node) -> dict:
    nvidia = node.run(["-q"])
    python = node.run_python(["-q"])
    assert nvidia.returncode == 0 and python.returncode == 0, nvidia.stderr + python.stderr
    seen, _ = run_probe(node.overlay.lib, {names.ENV_DEV_ROOT: node.dev_root}, "visible")
    return {"nvidia-smi 550": _states(nvidia.stdout), "python nvidia-smi": _states(python.stdout),
            "pynvml": sorted({g["fabric"][0] for g in seen["gpus"]})}


def _states(text: str) -> list:
    lines = text.splitlines()
    return sorted({lines[i + 1].split(":")[1].strip() for i, line in enumerate(lines)
                   if line.strip() == "Fabric"})


def fabricmanager(state_dir: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mokka", "fabricmanager", "--state-dir", state_dir,
                             "--log-level", "error", *args], cwd=REPO, env=clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_auto_is_in_progress_before_the_marker_and_completed_after(staged_node):
    node = staged_node("gb300")
    state_dir = node.overlay.fabric_state
    procs = []
    try:
        completed = {"nvidia-smi 550": ["Completed"], "python nvidia-smi": ["Completed"],
                     "pynvml": ["completed"]}
        assert fabric_states(node) == completed, "no fabricmanager on the node: auto is completed"
        procs.append(fabricmanager(state_dir, "--delay", "600"))
        wait_until(lambda: os.path.isdir(state_dir), what="the state dir")
        assert fabric_states(node) == {"nvidia-smi 550": ["In Progress"], "python nvidia-smi": ["In Progress"],
                                       "pynvml": ["in_progress"]}
        procs[0].send_signal(signal.SIGTERM)
        assert procs[0].wait(20) == 0
        procs.append(fabricmanager(state_dir))
        wait_until(lambda: os.path.exists(node.overlay.fabric_ready), what="the marker")
        assert fabric_states(node) == completed
        procs[1].send_signal(signal.SIGTERM)
        assert procs[1].wait(20) == 0
        assert not os.path.exists(node.overlay.fabric_ready)
        assert fabric_states(node)["pynvml"] == ["in_progress"], "the marker went with the fabricmanager"
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(state_dir, ignore_errors=True)
