"""A node with a real NVIDIA driver: the agent refuses to stage with one line and exit 1,
having changed nothing (no overlay, no lock); --allow-real-driver stages anyway; teardown
still runs; Mokka's own staging never reads as a real driver on the next start."""

from __future__ import annotations

import os

import pytest
from helpers import run_agent
from treelist import diff, listing

REAL_VERSION = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
                "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
ADVICE = ("Mokka mocks GPUs only on nodes without one: run it on other nodes (the chart: label "
          "only those nvml-mock.nvidia.com/enabled=true), or pass --allow-real-driver where the "
          "driver belongs to another machine (a kind node on a GPU workstation)")


def with_proc_version(root: str, text: str = REAL_VERSION) -> str:
    path = os.path.join(root, "proc", "driver", "nvidia", "version")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(text)
    return path


def with_sys_module(root: str) -> str:
    path = os.path.join(root, "sys", "module", "nvidia")
    os.makedirs(os.path.join(path, "parameters"))
    with open(os.path.join(path, "version"), "w") as f:
        f.write("550.54.15\n")
    return path


@pytest.mark.parametrize("mode", [("--once",), ("--resync-interval", "0")], ids=["once", "serve"])
def test_a_real_driver_version_file_is_refused_and_nothing_changes(scratch, mode):
    root, _, _ = scratch
    version = with_proc_version(root)
    before = listing(root)
    r = run_agent(root, *mode, "--profile", "t4", "--health-addr", "")
    assert r.returncode == 1
    assert r.stderr == (
        f"node-agent: refusing to stage: this node has a real NVIDIA driver ({version} reads "
        "'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024'"
        f"); {ADVICE}\n")
    after = listing(root)
    assert after == before, diff(before, after)
    assert not os.path.exists(os.path.join(root, "var", "lib", "mokka"))        # no lock left


def test_a_loaded_nvidia_module_is_refused_and_nothing_changes(scratch):
    root, _, _ = scratch
    module = with_sys_module(root)
    before = listing(root)
    r = run_agent(root, "--once", "--profile", "t4")
    assert r.returncode == 1
    assert r.stderr == (f"node-agent: refusing to stage: this node has a real NVIDIA driver "
                        f"({module} exists (the module's directory: the nvidia module is loaded)); "
                        f"{ADVICE}\n")
    assert listing(root) == before


def test_a_version_file_that_is_a_link_is_not_followed_but_still_refused(scratch):
    root, outside, _ = scratch
    target = os.path.join(outside, "elsewhere")
    with open(target, "w") as f:
        f.write(REAL_VERSION)
    os.makedirs(os.path.join(root, "proc", "driver", "nvidia"))
    version = os.path.join(root, "proc", "driver", "nvidia", "version")
    os.symlink(target, version)
    r = run_agent(root, "--once", "--profile", "t4")
    assert r.returncode == 1
    assert r.stderr.startswith(f"node-agent: refusing to stage: this node has a real NVIDIA driver "
                               f"({version} exists (is a symbolic link, not a regular file)); ")
    assert r.stderr.count("\n") == 1


def test_a_long_first_line_is_quoted_shortened_on_one_line(scratch):
    root, _, _ = scratch
    version = with_proc_version(root, "NVRM version: " + "x" * 300 + "\x1b[2J\n")
    r = run_agent(root, "--once", "--profile", "t4")
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1
    assert f"({version} reads 'NVRM version: {'x' * 106}...')" in r.stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_allow_real_driver_stages_and_teardown_leaves_the_root_as_found(scratch, how):
    root, _, _ = scratch
    with_proc_version(root)
    with_sys_module(root)
    before = listing(root)
    args, env = (["--allow-real-driver"], None) if how == "flag" else \
        ([], {"MOKKA_AGENT_ALLOW_REAL_DRIVER": "true"})
    r = run_agent(root, "--once", "--profile", "t4", *args, env=env)
    assert r.returncode == 0, r.stderr
    assert os.path.isdir(os.path.join(root, "var", "lib", "nvml-mock", "driver"))
    # The real driver's files are the host's: staging left them as they were.
    with open(os.path.join(root, "proc", "driver", "nvidia", "version")) as f:
        assert f.read() == REAL_VERSION
    # Teardown is never refused: it only removes what Mokka staged.
    assert run_agent(root, "--teardown").returncode == 0
    after = listing(root)
    assert after == before, diff(before, after)


def test_mokkas_own_staging_does_not_read_as_a_real_driver_on_restart(scratch):
    root, _, _ = scratch
    before = listing(root)
    assert run_agent(root, "--once", "--profile", "t4").returncode == 0
    # The mock's proc and module trees are under the overlay, never at the kernel's paths.
    assert os.path.isfile(os.path.join(root, "var", "lib", "nvml-mock", "driver", "proc", "driver",
                                       "nvidia", "version"))
    assert not os.path.exists(os.path.join(root, "proc"))
    assert not os.path.exists(os.path.join(root, "sys", "module"))
    r = run_agent(root, "--once", "--profile", "t4")
    assert r.returncode == 0, r.stderr
    assert run_agent(root, "--teardown").returncode == 0
    after = listing(root)
    assert after == before, diff(before, after)
