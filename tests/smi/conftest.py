"""Fixtures that stage a real overlay and run the STAGED shims as subprocesses.

An overlay holds what the node agent stages for them: the Python package and its
launchers, the mock NVML library (the one this checkout built) and the profile
with its compiled companion.

    staged(profile)  (session factory)  Overlay: root, smi, check_fabric, state, run()
    dev_root         (function)         an empty tmp dir used as MOCK_NVML_DEV_ROOT;
                                        touch(i) creates <dev_root>/dev/nvidia<i>

Every run gets a clean environment: no MOCK_* variables from the caller, the
staged bin dir first on PATH, a dev root with no /dev/nvidiaN unless a test
creates some, so the host's devices never leak in, and the pinned second
(MOCK_NVML_CLOCK), so moving readings are the same in every run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mokka.core import compile as comp
from mokka.core import launcher, names
from mokka.engine import flatstate
from mokka.core import profile as prof
from tests.corpus.dynamic_cases import PINNED_CLOCK
from tests.native.staged import nvml_build  # noqa: F401 (fixture)

PROFILES = names.BUILTIN_PROFILES
_STRIP = ("MOCK_", "NODE_NAME", "PYTHONPATH", "PYTHONPROFILEIMPORTTIME")


@dataclass
class Overlay:
    root: Path
    state: dict
    profile: str

    @property
    def bin(self) -> Path:
        return self.root / names.DRIVER_BIN_DIR

    @property
    def smi(self) -> str:
        return str(self.bin / "nvidia-smi")

    @property
    def check_fabric(self) -> str:
        return str(self.bin / "check-fabric")

    @property
    def config_dir(self) -> Path:
        return self.root / names.DRIVER_CONFIG_DIR

    @property
    def overrides_dir(self) -> Path:
        return self.config_dir / names.OVERRIDES_DIR

    def env(self, dev_root: str, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}
        env["PATH"] = f"{self.bin}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}"
        env[names.ENV_DEV_ROOT] = dev_root
        env[names.ENV_NVML_CLOCK] = str(PINNED_CLOCK)     # utilization moves: read one second
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run(self, args, dev_root: str, exe: str | None = None, **extra) -> subprocess.CompletedProcess:
        return subprocess.run([exe or self.smi, *args], env=self.env(dev_root, **extra),
                              capture_output=True, text=True, timeout=60)


def stage_overlay(root: Path, profile: str, library: str, topology: dict | None = None,
                  node_name: str = "") -> Overlay:
    """An overlay whose state is compiled from ``profile`` (with ``topology`` applied for
    ``node_name``, as the agent compiles it)."""
    launcher.stage(str(root))
    loaded = prof.load(profile)
    state = comp.compile_profile(loaded, topology, node_name)
    cfg = root / names.DRIVER_CONFIG_DIR
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / names.PROFILE_FILE).write_bytes(loaded.text)
    (cfg / flatstate.companion_path(names.PROFILE_FILE)).write_bytes(flatstate.state_companion(state))
    lib = root / names.DRIVER_LIB_DIR
    lib.mkdir(parents=True, exist_ok=True)
    shutil.copy(library, lib / names.NVML_LIB_FILE)
    return Overlay(root=root, state=state, profile=profile)


@pytest.fixture(scope="session")
def staged(tmp_path_factory, nvml_build):
    cache: dict[str, Overlay] = {}

    def get(profile: str) -> Overlay:
        if profile not in cache:
            cache[profile] = stage_overlay(tmp_path_factory.mktemp(f"overlay-{profile}"), profile, nvml_build)
        return cache[profile]
    return get


class DevRoot:
    def __init__(self, path: Path):
        self.path = path
        (path / "dev").mkdir(parents=True, exist_ok=True)

    def touch(self, *minors: int) -> None:
        for m in minors:
            (self.path / "dev" / names.gpu_node_name(m)).touch()

    def __str__(self) -> str:
        return str(self.path)


@pytest.fixture
def dev_root(tmp_path) -> DevRoot:
    return DevRoot(tmp_path / "devroot")


@pytest.fixture
def fresh(tmp_path, nvml_build):
    """A private overlay (for tests that write overrides, or compile a topology in)."""
    def make(profile: str, topology: dict | None = None, node_name: str = "") -> Overlay:
        return stage_overlay(tmp_path / f"overlay-{profile}-{node_name}", profile, nvml_build,
                             topology, node_name)
    return make
