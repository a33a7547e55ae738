"""Nodes staged by the real node agent under a scratch root, for the tests that run
containers on them, and the environment that runs ``python -m mokka`` from this checkout."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

from mokka.core import names
from mokka.core.overlay import Overlay
from tests.conftest import REPO

PROFILE = "t4"          # 4 GPUs: small specs, quick staging
IMEX_CHANNELS = 4
#: The image of Debian's libc6 and busybox-static: glibc, no Python.
GLIBC_IMAGE = "docker.io/library/mokka-glibc:test"


def mokka_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def agent_argv(root: str, profile: str, *agent_args: str) -> list[str]:
    return [sys.executable, "-m", "mokka", "node-agent", "--host-root", root, "--profile", profile,
            "--health-addr", "", "--log-format", "plain", *agent_args]


@contextlib.contextmanager
def native_node(tmp_path_factory, name: str, profile: str, *agent_args: str):
    """A node staged by the real agent (--once) with this machine's native libraries
    built first (the agent stages what native/build.py wrote); torn down after."""
    build = subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"),
                            "--arch", os.uname().machine, "-q"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    root = str(tmp_path_factory.mktemp(name))
    agent = agent_argv(root, profile, *agent_args)
    done = subprocess.run(agent + ["--once"], env=mokka_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    try:
        yield root, Overlay(os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/")))
    finally:
        subprocess.run(agent + ["--teardown"], check=True, env=mokka_env(), capture_output=True)
