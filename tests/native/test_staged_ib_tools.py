"""The agent stages bookworm's IB tools (--ib-tools) with their library closure
and the shims under the driver tree: a process with nothing but the seed-000
environment and the staged preloads runs them from the overlay."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mokka.agent import ibtools
from mokka.core import elf, names
from mokka.core.overlay import Overlay, ib_env
from tests.conftest import REPO
from tests.native.ibnode import base_env, shim_libs  # noqa: F401 (fixture)
from tests.peers import peer


@pytest.fixture(scope="module")
def node(shim_libs, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("ibtools-node"))
    agent = [sys.executable, "-m", "mokka", "node-agent", "--host-root", root, "--profile", "b200",
             "--node-name", "node-t", "--health-addr", "", "--ib-tools", peer("IB_ROOT")]
    env = {**base_env(), "PYTHONPATH": REPO}
    done = subprocess.run(agent + ["--once"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    yield Overlay(os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/")))
    subprocess.run(agent + ["--teardown"], capture_output=True, env=env)


def staged_run(ov: Overlay, tool: str, *args: str) -> subprocess.CompletedProcess:
    preload = ":".join(ov.join(p) for p in names.LD_PRELOAD_SHIMS
                       if not p.endswith(names.IB_UMAD_LIB_FILE))   # umad needs mock-ib running
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": preload, **ib_env(ov)}
    return subprocess.run([os.path.join(ov.bin, tool), *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_tools_and_their_libraries_are_staged(node):
    assert sorted(set(os.listdir(node.bin)) & set(ibtools.TOOLS)) == sorted(ibtools.TOOLS)
    libs = set(os.listdir(node.lib))
    assert {"libibumad.so.3", "libibmad.so.5", "libibnetdisc.so.5", "libibverbs.so.1",
            "libnl-3.so.200", "libnl-route-3.so.200"} <= libs
    assert not {n for n in libs if n.startswith(("libc.so", "ld-linux"))}
    with open(os.path.join(node.bin, "ibstat"), "rb") as f:
        assert elf.search_path(f.read()) == "$ORIGIN/../lib64"
    for file in (names.IB_VERBS_LIB_FILE, names.IB_SYS_LIB_FILE, names.FS_LIB_FILE):
        assert os.path.isfile(os.path.join(node.preload_lib, file))


def test_staged_ibstat_and_ibv_devinfo_run_from_the_overlay_alone(node):
    done = staged_run(node, "ibstat", "-l")
    assert (done.returncode, done.stdout) == (0, "".join(f"mlx5_{i}\n" for i in range(8))), done.stderr
    done = staged_run(node, "ibv_devinfo", "-d", "mlx5_7")
    assert "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n" in done.stdout, done.stderr
    done = staged_run(node, "ibstatus", "mlx5_2:1")
    assert "\tstate:\t\t 4: ACTIVE\n" in done.stdout


def test_the_container_needs_glibc_2_34_for_bookworms_tools(node):
    blobs = []
    for d, names_ in ((node.bin, ibtools.TOOLS),
                      (node.lib, [n for n in os.listdir(node.lib) if not n.startswith("libnvidia")])):
        for n in names_:
            with open(os.path.join(d, n), "rb") as f:
                blobs.append(f.read())
    assert ibtools.glibc_needed(blobs) == (2, 34)


def test_a_missing_tools_root_is_one_line_and_exit_1(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mokka", "node-agent", "--host-root", str(tmp_path),
                           "--once", "--health-addr", "", "--ib-tools", str(tmp_path / "nope")],
                          capture_output=True, text=True, env={**base_env(), "PYTHONPATH": REPO})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == f"node-agent: --ib-tools {tmp_path / 'nope'}: no such directory"
