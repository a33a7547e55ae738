"""What a workload can put in driver/config (bound writable into every injected container, where
a container running as root can replace any entry) never makes the root agent follow a link,
change anything outside the tree, fail to start, fail to stage or fail to tear down.

Each case is an attack that once worked: a link at ``processes`` made root chmod 01777 whatever
it named; a directory at a temp file's name or at ``mig.nvml`` stopped every start or every
Stage; a tree 1,100 directories deep stopped teardown."""

from __future__ import annotations

import os
import stat

import pytest
from helpers import run_agent
from treelist import diff, listing

from mokka.core import names
from mokka.core.overlay import host_overlay
from tests.deeptree import nested
from tests.native.staged import nvml_build  # noqa: F401  (fixture: the agent stages the library)

NOBODY = 65534


def stage(root: str, profile: str = "t4") -> None:
    done = run_agent(root, "--once", "--health-addr", "", "--profile", profile)
    assert done.returncode == 0, done.stderr


def teardown_leaves(root: str, before: list[str]) -> None:
    done = run_agent(root, "--teardown")
    assert done.returncode == 0, done.stderr
    after = listing(root)
    assert after == before, diff(before, after)


def outside_dir(base: str) -> str:
    """A host directory a link can name: mode 0755, one file, owned by root."""
    path = os.path.join(base, "host-etc")
    os.makedirs(path)
    os.chmod(path, 0o755)
    with open(os.path.join(path, "passwd"), "w") as f:
        f.write("root:x:0:0::/root:/bin/sh\n")
    return path


# (what a workload puts at driver/config/processes)
PROCESSES_ATTACKS = ["link to a host directory", "link to a missing path", "a file", "a FIFO",
                     "another user's directory"]


@pytest.mark.parametrize("attack", PROCESSES_ATTACKS)
def test_what_a_workload_puts_at_processes_is_replaced_never_followed(scratch, nvml_build, attack):
    root, outside, _ = scratch
    host_etc = outside_dir(outside)
    before = listing(root)
    stage(root)
    config = host_overlay(root).driver_config
    records = os.path.join(config, "processes")
    os.rmdir(records)
    if attack == "link to a host directory":
        os.symlink(host_etc, records)
    elif attack == "link to a missing path":
        os.symlink(os.path.join(outside, "made-by-root"), records)
    elif attack == "a file":
        with open(records, "w") as f:
            f.write("x\n")
    elif attack == "a FIFO":
        os.mkfifo(records)
    else:
        os.mkdir(records, 0o700)
        os.chown(records, NOBODY, NOBODY)

    stage(root)                            # the next start (and every Stage) makes the directory

    st = os.lstat(records)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o1777 and st.st_uid == 0
    host = os.stat(host_etc)
    assert stat.S_IMODE(host.st_mode) == 0o755 and host.st_uid == 0
    assert os.listdir(host_etc) == ["passwd"]
    assert not os.path.lexists(os.path.join(outside, "made-by-root"))
    teardown_leaves(root, before)


# Names the agent's own clean-up looks at: a killed writer's temp files, the MIG and drain states'.
RESERVED = [".config.yaml.1234.tmp", ".nvidia0.77.dev", ".machine-type.9.lnk", "mig.nvml",
            ".mig.nvml.4321.0.tmp", "mig.nvml.lock", "settings.nvml", ".settings.nvml.4321.1.tmp"]


@pytest.mark.parametrize("profile", ["t4", "a100"])
def test_directories_at_reserved_names_neither_stop_a_start_nor_a_stage(scratch, nvml_build, profile):
    root, outside, _ = scratch
    before = listing(root)
    stage(root, profile)
    config = host_overlay(root).driver_config
    link_target = outside_dir(outside)
    for name in RESERVED:
        os.makedirs(os.path.join(config, name, "inside"))
        os.symlink(link_target, os.path.join(config, name, "inside", "out"))

    stage(root, profile)                   # a start: the killed writers' temps are cleared
    for name in RESERVED:
        assert not os.path.lexists(os.path.join(config, name)), name
    assert os.listdir(link_target) == ["passwd"]

    for name in RESERVED:                  # put back while staged: teardown takes them too
        os.makedirs(os.path.join(config, name, "inside"))
    teardown_leaves(root, before)


def test_a_tree_1100_deep_in_each_config_place_goes_at_teardown(scratch, nvml_build):
    root, _, _ = scratch
    before = listing(root)
    stage(root)
    ov = host_overlay(root)
    os.makedirs(ov.overrides, exist_ok=True)
    for place in (ov.driver_config, ov.overrides, ov.process_records):
        nested(os.path.join(place, "deep"), 1100)
    teardown_leaves(root, before)


def test_a_tree_1100_deep_at_a_staged_file_name_is_replaced_at_the_next_start(scratch, nvml_build):
    root, _, _ = scratch
    before = listing(root)
    stage(root)
    ov = host_overlay(root)
    for name in (names.PROFILE_FILE, names.XID_EVENTS_FILE):
        path = os.path.join(ov.driver_config, name)
        if os.path.lexists(path):
            os.unlink(path)
        nested(path, 1100)
    stage(root)
    with open(os.path.join(ov.driver_config, names.PROFILE_FILE), "rb") as f:
        assert f.read(64).strip()          # the profile copy, a file again
    teardown_leaves(root, before)


def test_device_nodes_at_the_staged_names_are_replaced_never_opened(scratch, nvml_build):
    """A container's default capabilities allow mknod in its writable bind: root on the host
    must not open a host device through such a node (inotify sees every open of it)."""
    from inotify_simple import INotify, flags

    root, _, _ = scratch
    before = listing(root)
    stage(root)
    config = host_overlay(root).driver_config
    staged = ("config.yaml", "config.nvml", "machine-type")
    with INotify(nonblocking=True) as watch:
        for name in staged:
            path = os.path.join(config, name)
            os.unlink(path)
            os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 3))        # /dev/null's numbers
            watch.add_watch(path, flags.OPEN)
        stage(root)
        assert [e for e in watch.read(timeout=0) if e.mask & flags.OPEN] == []
    for name in staged:
        assert stat.S_ISREG(os.lstat(os.path.join(config, name)).st_mode), name
    teardown_leaves(root, before)
