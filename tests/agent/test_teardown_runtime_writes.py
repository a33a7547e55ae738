"""``--teardown`` after everything that writes into a staged node at runtime: ``mokka ctl set``
and ``ctl xid`` (through driver/config and the Go layout's config/), ``nvidia-smi -r`` of
NVIDIA's binary over the mock NVML and of ours, and a container's writes through its
writable bind of driver/config. The root is left exactly as found, and nothing a link in
those directories points at is touched."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import run_agent
from treelist import diff, listing

from mokka.core import names
from mokka.core.overlay import host_overlay
from tests.native.staged import StagedNode, ctl, nvml_build, ok  # noqa: F401 (fixture)
from tests.peers import peer


def ctl_at(node: StagedNode, config: str, *args: str) -> subprocess.CompletedProcess:
    """``mokka ctl ARGS`` finding the node through ``config`` (MOCK_NVML_CONFIG)."""
    return subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], capture_output=True, text=True,
                          env=node.env(**{names.ENV_NVML_CONFIG: config}), timeout=60)


def container_writes(config_dir: str, kept: str) -> None:
    """What a workload may leave in driver/config: files, directories, a FIFO, a killed
    writer's temp file, and links out of the tree (to a file and to a directory)."""
    with open(os.path.join(config_dir, "notes.txt"), "w") as f:
        f.write("written by a workload\n")
    os.makedirs(os.path.join(config_dir, "cache", "deep"))
    with open(os.path.join(config_dir, "cache", "deep", "blob"), "wb") as f:
        f.write(b"\0" * 4096)
    os.mkfifo(os.path.join(config_dir, "pipe"))
    with open(os.path.join(config_dir, ".overrides.yaml.4242.tmp"), "w") as f:
        f.write("half")
    os.symlink(kept, os.path.join(config_dir, "out-dir"))
    os.symlink(os.path.join(kept, "host-file"), os.path.join(config_dir, "out-file"))


def test_teardown_after_ctl_xid_reset_and_a_containers_writes_leaves_the_root_as_found(
        scratch, nvml_build):
    root, outside, procs = scratch
    kept = os.path.join(outside, "kept")            # what links in the tree point at
    os.makedirs(os.path.join(kept, "sub"))
    with open(os.path.join(kept, "host-file"), "w") as f:
        f.write("the host's\n")
    before = listing(root)
    staged = run_agent(root, "--once", "--health-addr", "", "--nvidia-smi", peer("NVIDIA_SMI"))
    assert staged.returncode == 0, staged.stderr
    ov = host_overlay(root)
    dev_root = os.path.join(outside, "empty-dev-root")
    os.makedirs(dev_root)
    node = StagedNode(root, ov, dev_root)

    ok(ctl(node, "set", "0", "temperature=90"))
    ok(ctl(node, "set", "1", "power=300W", "utilization.gpu=70"))
    ok(ctl(node, "xid", "1", "79"))
    assert "was successfully reset" in ok(node.run(["-r", "-i", "0"]))          # NVIDIA's, native writer
    assert "was successfully reset" in ok(node.run_python(["-r", "-i", "1"]))   # ours
    ok(ctl(node, "set", "2", "lost=true"))
    ok(ctl_at(node, os.path.join(ov.config, names.PROFILE_FILE), "xid", "2", "48"))  # Go layout
    container_writes(ov.driver_config, kept)
    written = set(os.listdir(ov.driver_config)) - {names.PROFILE_FILE, "config.nvml"}
    assert {names.XID_EVENTS_FILE, "notes.txt", "cache", "out-dir"} <= written, written
    assert names.XID_EVENTS_FILE in os.listdir(ov.config)

    done = run_agent(root, "--teardown")
    assert done.returncode == 0, done.stderr
    after = listing(root)
    assert after == before, diff(before, after)
    assert sorted(os.listdir(kept)) == ["host-file", "sub"]
    with open(os.path.join(kept, "host-file")) as f:
        assert f.read() == "the host's\n"

