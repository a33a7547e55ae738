"""NVIDIA's nvidia-smi 550 over the mock library on a node the agent staged: its device
modifications (-pl, -pm, -c, -lgc, -lmc, -ac, -e, -p, -acp, -caa, then -r) change what pynvml reads in another
process and what our nvidia-smi prints; ours prints what NVIDIA's prints for the same
commands on a node of the same board; a user that is not root gets NVIDIA's
insufficient-permissions texts; the agent's teardown leaves no settings behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from mokka.core import profile as prof
from tests.native.conftest import HERE
from tests.native.staged import nvml_build, ok, stage_node, staged_node  # noqa: F401 (fixtures)
from tests.peers import peer

PROBE = os.path.join(HERE, "probe_settings.py")
BUS0 = "00000000:1A:00.0"
#: One administrator's session, in order.
SESSION = [["-pl", "300", "-i", "0"], ["-pm", "0", "-i", "0"], ["-lmc", "2619", "-i", "0"], ["-lmc", "a,b", "-i", "0"],
           ["-lmc", "1000,2000", "-i", "0"], ["-rmc", "-i", "0"], ["-pm", "1", "-i", "0"],
           ["-c", "EXCLUSIVE_PROCESS", "-i", "0"], ["-c", "3", "-i", "0"], ["-lgc", "1000,1500", "-i", "0"],
           ["-ac", "2619,1410", "-i", "0"], ["-am", "1", "-i", "0"], ["-am", "ENABLED", "-i", "0"],
           ["-e", "0", "-i", "0"], ["-pl", "5", "-i", "0"],
           ["-lgc", "1500,1000", "-i", "0"], ["-c", "9", "-i", "0"], ["-rac", "-i", "0"], ["-p", "0", "-i", "0"],
           ["-p", "AGGREGATE", "-i", "0"], ["-p", "+1", "-i", "0"], ["-p", "2", "-i", "0"], ["-p", "x", "-i", "0"],
           ["-acp", "0", "-i", "0"], ["-acp", "UNRESTRICTED", "-i", "0"], ["-acp", "x", "-i", "0"], ["-caa", "-i", "0"]]
QUERY = ["--query-gpu=power.limit,persistence_mode,compute_mode,clocks.sm,clocks.applications.graphics,"
         "ecc.mode.current,ecc.mode.pending", "--format=csv,noheader", "-i", "0"]


def board(staged_node, tmp_path_factory, name: str):
    path = tmp_path_factory.mktemp(name) / f"{name}.yaml"
    path.write_bytes(prof.load("h100").text)
    return staged_node(str(path))


def read(node) -> dict:
    done = subprocess.run([sys.executable, PROBE, "read", "0"], capture_output=True, text=True, timeout=60,
                          env=node.env(MOCK_NVML_CONFIG=node.config, LD_LIBRARY_PATH=node.overlay.lib))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_nvidias_modifications_are_read_by_pynvml_and_ours_print_the_same(staged_node, tmp_path_factory):
    theirs, ours = (board(staged_node, tmp_path_factory, f"h100-setters-{k}") for k in "ab")
    said_theirs = [(r.returncode, r.stdout) for r in map(theirs.run, SESSION)]
    said_ours = [(r.returncode, r.stdout) for r in map(ours.run_python, SESSION)]
    assert said_theirs == said_ours
    assert said_theirs[0] == (0, f"Power limit for GPU {BUS0} was set to 300.00 W from 700.00 W.\nAll done.\n")
    assert said_theirs[7] == (0, f"Set compute mode to EXCLUSIVE_PROCESS for GPU {BUS0}.\nAll done.\n")
    changed = {"power_limit": 300000, "enforced_limit": 300000, "persistence": 1, "compute_mode": 3, "accounting": 1,
               "app_graphics": 1980, "app_memory": 2619, "graphics": 1000, "sm": 1000, "ecc": [1, 0],
               "memory": 2619, "draw": 120000, "reasons": 0x1, "app_clocks_restricted": 1, "ecc_counts": [0, 0, 0, 0]}
    assert read(theirs) == read(ours) == changed
    expected = "300.00 W, Enabled, Exclusive_Process, 1000 MHz, 1980 MHz, Enabled, Disabled\n"
    assert ok(theirs.run(QUERY)) == ok(theirs.run_python(QUERY)) == expected
    assert ok(theirs.run(["-r", "-i", "0"])) == f"GPU {BUS0} was successfully reset.\nAll done.\n"
    after = "700.00 W, Enabled, Default, 345 MHz, 1980 MHz, Disabled, Disabled\n"
    assert ok(theirs.run(QUERY)) == ok(theirs.run_python(QUERY)) == after
    assert read(theirs)["ecc"] == [0, 0]


@pytest.fixture
def readable(nvml_build):
    """A node staged where every user may read it (tmp_path's parents are root's alone),
    and the agent's command."""
    root = tempfile.mkdtemp(prefix="mokka-setters-550-")
    os.chmod(root, 0o755)
    node, agent = stage_node(root, "h100", peer("NVIDIA_SMI"))
    try:
        yield node, agent
    finally:
        subprocess.run(agent + ["--teardown"], capture_output=True, timeout=120)
        shutil.rmtree(root)


def nobody():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def test_a_user_that_is_not_root_gets_insufficient_permissions_and_teardown_drops_the_settings(readable):
    node, agent = readable
    for args, text in ((["-pl", "300"], f"Failed to set power management limit for GPU {BUS0}: Insufficient "
                                        "Permissions"),
                       (["-pm", "0"], f"Unable to set persistence mode for GPU {BUS0}: Insufficient Permissions"),
                       (["-c", "3"], f"Unable to set the compute mode for GPU {BUS0}: Insufficient Permissions"),
                       (["-e", "0"], f"Unable to set ECC config for GPU {BUS0}: Insufficient Permissions"),
                       (["-lgc", "1000,1500"], "The current user does not have permission to change clocks for "
                                               f"GPU {BUS0}.")):
        done = subprocess.run([node.nvidia_smi, *args, "-i", "0"], capture_output=True, text=True, timeout=60,
                              env=node.env(), preexec_fn=nobody)
        assert (done.returncode, done.stdout) == (4, text + "\nTerminating early due to previous errors.\n")
    settings = os.path.join(node.overlay.driver_config, "settings.nvml")
    assert not os.path.exists(settings)
    ok(node.run(["-pl", "300", "-i", "0"]))
    assert os.path.isfile(settings)
    done = subprocess.run(agent + ["--teardown"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not os.path.lexists(settings)
