"""Debian bookworm's infiniband-diags over libibmockumad and a real node agent.

    umad_shim   (session)  this machine's libibmockumad.so.1 (tests/nativelibs.py; the
                           sanitizer rerun points it at its own build)
    IbAgent     a node agent serving on a scratch root (its mock-ib daemon included)
    run_tool(tool_key, env, *args)  the tool from paths.env with the bookworm libraries,
                           the shim preloaded and only the given variables
"""

from __future__ import annotations

import os
import platform
import subprocess

import pytest

from mokka.core.overlay import host_overlay, ib_env
from tests.agent.helpers import AgentProcess
from tests.native.conftest import SANITIZER_PRELOAD
from tests.peers import peer
from tests.waiting import wait_until

_STRIP = ("MOCK_", "NODE_NAME", "LD_LIBRARY_PATH", "LD_PRELOAD")


@pytest.fixture(scope="session")
def umad_shim(native_libs) -> str:
    return native_libs.path("ibmockumad")


@pytest.fixture(scope="session")
def sys_shim(native_libs) -> str:
    """libibmocksys (the sysfs path shim), for tests that need the sysfs tier beside."""
    return native_libs.path("ibmocksys")


def node_env(root: str) -> dict:
    """The InfiniBand variables the plugin gives a container on the node staged under ``root``."""
    return ib_env(host_overlay(root))


def run_tool(tool: str, shim: str, env: dict, *args: str, timeout: float = 60):
    """``shim``: one library, or several joined by ':' in preload order."""
    ib_root = peer("IB_ROOT")
    libdir = os.path.join(ib_root, "usr", "lib", f"{platform.machine()}-linux-gnu")
    full = {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}
    asan = os.environ.get(SANITIZER_PRELOAD)
    full.update({"LD_LIBRARY_PATH": libdir,
                 "LD_PRELOAD": ":".join(([asan] if asan else []) + shim.split(":"))})
    full.update(env)
    return subprocess.run([peer(tool), *args], env=full, capture_output=True, text=True,
                          timeout=timeout)


def start_agent(root: str, log_dir: str, node: str, profile: str, *args: str) -> AgentProcess:
    agent = AgentProcess(root, "--profile", profile, "--node-name", node,
                         "--resync-interval", "0", *args, log_dir=log_dir)
    agent.wait_staged()
    # Staged is before the daemons start; ready is after (mock-ib serving).
    wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz (mock-ib serving)")
    return agent
