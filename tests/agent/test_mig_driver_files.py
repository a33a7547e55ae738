"""The driver's fixed MIG files, staged by a real agent process on every node, and
gone again at teardown (facts §4: numbering, contents, modes).
"""

from __future__ import annotations

import os
import stat

import pytest

from helpers import run_agent
from treelist import diff, listing

from mokka.core.overlay import host_overlay


def read(path: str) -> tuple[str, int]:
    with open(path) as f:
        return f.read(), stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("mig-files"))
    before = listing(root)
    done = run_agent(root, "--once", "--profile", "a100", "--mig-layout", "all-balanced",
                     "--health-addr", "", "--container-runtime", "none")
    assert done.returncode == 0, done.stderr
    yield root, host_overlay(root)
    done = run_agent(root, "--teardown")
    assert done.returncode == 0, done.stderr
    after = listing(root)
    assert after == before, diff(before, after)


def test_mig_minors_numbers_every_capability_as_the_driver_does(staged):
    _, ov = staged
    text, mode = read(os.path.join(ov.root, "driver/proc/driver/nvidia-caps/mig-minors"))
    lines = text.splitlines()
    assert mode == 0o444
    assert lines[:5] == ["config 1", "monitor 2", "gpu0/gi0/access 3", "gpu0/gi0/ci0/access 4",
                         "gpu0/gi0/ci1/access 5"]
    by_path = dict(reversed(line.split(" ")) for line in lines)
    by_path = {path: int(minor) for minor, path in by_path.items()}
    assert (by_path["gpu0/gi1/access"], by_path["gpu0/gi1/ci0/access"], by_path["gpu0/gi1/ci2/access"]) == \
        (12, 13, 15)
    assert lines[-1] == "gpu31/gi14/ci7/access 4322"
    assert len(lines) == 2 + 32 * 15 * 9 and len(set(by_path.values())) == len(lines)


@pytest.mark.parametrize("name,minor,mode,node_mode", [
    ("config", 1, 256, 0o400),
    ("monitor", 2, 292, 0o444),
])
def test_the_node_wide_capabilities_and_their_nodes(staged, name, minor, mode, node_mode):
    _, ov = staged
    assert read(os.path.join(ov.root, f"driver/proc/driver/nvidia/capabilities/mig/{name}")) == \
        (f"DeviceFileMinor: {minor}\nDeviceFileMode: {mode}\nDeviceFileModify: 1\n", node_mode)
    st = os.lstat(os.path.join(ov.root, f"driver/dev/nvidia-caps/nvidia-cap{minor}"))
    assert stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (236, minor)
    assert stat.S_IMODE(st.st_mode) == node_mode
