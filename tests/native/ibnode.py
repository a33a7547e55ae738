"""Fixtures for the path shims over a node staged by the real agent, driven by
Debian bookworm's own tools (ibstat, ibstatus, lspci; .ci/fetch-runtime.sh).

    shim_libs        (session)  {file: path} of this machine's shims, built or
                                found by tests/nativelibs.py (the sanitizer rerun
                                points it at its own build)
    ib_node          (session)  factory(profile) -> IbNode, staged with --once under a
                                scratch root for node "node-a", torn down at the end
    IbNode.run(tool_key, *args, env=..., preload=...)   the tool with the bookworm
                                libraries, the shims preloaded and only the given env
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from mokka.core import names
from mokka.core.overlay import Overlay, gpu_env, ib_env
from tests.conftest import REPO
from tests.native.conftest import SANITIZER_PRELOAD
from tests.peers import peer

NODE = "node-a"
_STRIP = ("MOCK_", "NODE_NAME", "LD_LIBRARY_PATH", "LD_PRELOAD")
#: The shims of this suite, in the plugin's preload order.
SHIMS = ("ibmockverbs", "ibmocksys", "mockfs")


@pytest.fixture(scope="session")
def shim_libs(native_libs) -> dict[str, str]:
    """file name -> path of each shim (tests/nativelibs.py)."""
    return {os.path.basename(path): path for path in map(native_libs.path, SHIMS)}


def base_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}


@dataclass
class IbNode:
    root: str
    overlay: Overlay
    shims: dict[str, str]

    def ib_env(self) -> dict:
        """Seed 000, a container selected for InfiniBand and not for GPUs."""
        return {**ib_env(self.overlay), names.ENV_NVML_VISIBLE_DEVICES: names.VISIBLE_NONE}

    def gpu_env(self) -> dict:
        """Seed 000, a container given GPUs and not InfiniBand."""
        return {**gpu_env(self.overlay), names.ENV_IB: names.IB_OFF}

    def preload(self) -> str:
        files = [names.IB_VERBS_LIB_FILE, names.IB_SYS_LIB_FILE, names.FS_LIB_FILE]
        libs = [self.shims[f] for f in files if f in self.shims]
        asan = os.environ.get(SANITIZER_PRELOAD)
        return ":".join(([asan] if asan else []) + libs)

    def run(self, tool: str, *args: str, env: dict | None = None, preload: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess:
        ib_root = peer("IB_ROOT")
        full = base_env()
        triplet = f"{os.uname().machine}-linux-gnu"       # libnl-3 sits in lib/, the rest in usr/lib/
        full["LD_LIBRARY_PATH"] = ":".join(os.path.join(ib_root, d, triplet) for d in ("usr/lib", "lib"))
        if preload:
            full["LD_PRELOAD"] = self.preload()
        full.update(env or {})
        return subprocess.run([peer(tool), *args], capture_output=True, text=True, env=full,
                              timeout=timeout)


@pytest.fixture(scope="session")
def ib_node(shim_libs, tmp_path_factory):
    nodes: dict = {}
    agents = []

    def stage(profile: str) -> IbNode:
        if profile in nodes:
            return nodes[profile]
        root = str(tmp_path_factory.mktemp(f"ibnode-{profile}"))
        agent = [sys.executable, "-m", "mokka", "node-agent", "--host-root", root,
                 "--profile", profile, "--node-name", NODE, "--health-addr", "",
                 "--log-format", "plain"]
        env = base_env()
        env["PYTHONPATH"] = REPO
        done = subprocess.run(agent + ["--once"], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        agents.append((agent, env))
        nodes[profile] = IbNode(root, Overlay(os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/"))),
                                shim_libs)
        return nodes[profile]

    yield stage
    for agent, env in agents:
        subprocess.run(agent + ["--teardown"], capture_output=True, env=env)
