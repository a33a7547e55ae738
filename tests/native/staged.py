"""Nodes staged by the real agent with the mock NVML library (and NVIDIA's nvidia-smi).

Import the fixtures into a test module: ``from tests.native.staged import nvml_build, staged_node``.

    nvml_build     (session)  builds this machine's library into build/native
                              (where mokka.engine.native, and so the agent, find it)
    staged_node    (session)  factory(profile name or file, nvidia_smi=True) -> StagedNode: a node
                              staged by the real agent (--once), torn down at the end;
                              its processes read the pinned second (MOCK_NVML_CLOCK)
    stage_node(root, profile, nvidia_smi)  the same node outside pytest (bench/capture_fidelity.py)
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from mokka.core import names
from mokka.core.overlay import Overlay
from tests.conftest import REPO
from tests.corpus.dynamic_cases import PINNED_CLOCK
from tests.peers import peer

_STRIP = ("MOCK_", "NODE_NAME", "LD_LIBRARY_PATH", "LD_PRELOAD")


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture(scope="session")
def nvml_build() -> str:
    done = subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"),
                           "--arch", os.uname().machine, "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    path = os.path.join(REPO, "build", "native", os.uname().machine, names.NVML_LIB_FILE)
    assert os.path.isfile(path)
    return path


@dataclass
class StagedNode:
    root: str
    overlay: Overlay
    dev_root: str          # an empty MOCK_NVML_DEV_ROOT: no /dev/nvidiaN of the host leaks in

    @property
    def nvidia_smi(self) -> str:
        return os.path.join(self.overlay.bin, "nvidia-smi")

    @property
    def config(self) -> str:
        return os.path.join(self.overlay.driver_config, names.PROFILE_FILE)

    def env(self, **extra) -> dict:
        return clean_env(**{names.ENV_DEV_ROOT: self.dev_root, names.ENV_NVML_CLOCK: PINNED_CLOCK, **extra})

    def run(self, args, **extra) -> subprocess.CompletedProcess:
        """NVIDIA's staged nvidia-smi, with no MOCK_NVML_CONFIG: the library finds the node."""
        return subprocess.run([self.nvidia_smi, *args], capture_output=True, text=True,
                              env=self.env(**extra), timeout=60)

    def run_python(self, args, **extra) -> subprocess.CompletedProcess:
        """Our Python nvidia-smi over the same node."""
        env = self.env(**{names.ENV_NVML_CONFIG: self.config, **extra})
        return subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", *args],
                              capture_output=True, text=True, env=env, timeout=60)


def stage_node(root: str, profile: str, nvidia_smi: str | None) -> tuple[StagedNode, list[str]]:
    """A node the real agent stages (--once) under ``root`` with ``profile`` and, given its
    path, NVIDIA's nvidia-smi; and the agent's command (``+ ["--teardown"]`` removes it)."""
    agent = [sys.executable, "-m", "mokka", "node-agent", "--host-root", root,
             "--profile", profile, "--health-addr", "", "--log-format", "plain"]
    if nvidia_smi:
        agent += ["--nvidia-smi", nvidia_smi]
    done = subprocess.run(agent + ["--once"], capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
    dev_root = os.path.join(root, "empty-dev-root")
    os.makedirs(dev_root)
    return StagedNode(root, Overlay(os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/"))), dev_root), agent


@pytest.fixture(scope="session")
def staged_node(nvml_build, tmp_path_factory):
    nodes: dict = {}
    agents = []

    def stage(profile: str, nvidia_smi: bool = True) -> StagedNode:
        key = (profile, nvidia_smi)
        if key in nodes:
            return nodes[key]
        root = str(tmp_path_factory.mktemp(f"node-{os.path.basename(profile).partition('.')[0]}"))
        nodes[key], agent = stage_node(root, profile, peer("NVIDIA_SMI") if nvidia_smi else None)
        agents.append(agent)
        return nodes[key]

    yield stage
    for agent in agents:
        subprocess.run(agent + ["--teardown"], capture_output=True, env=clean_env())


def ctl(node: "StagedNode", *args: str) -> subprocess.CompletedProcess:
    """``mokka ctl ARGS`` against a staged node's profile."""
    return subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], capture_output=True, text=True,
                          env=node.env(MOCK_NVML_CONFIG=node.config), timeout=60)


def ok(result: subprocess.CompletedProcess) -> str:
    """The stdout of a command that must have exited 0."""
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    return result.stdout
