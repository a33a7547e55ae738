"""`nvidia-smi -mig 0|1` as the driver does it (issue 35): the driver resets the GPU itself, so
on a GPU no process holds the new MIG mode is current at once, no `nvidia-smi -r` asked for;
on a GPU a CUDA process holds, the mode is left pending and the activation status is IN_USE
(nvml.h's nvmlDeviceSetMigMode), the caller retrying once the GPU is idle.

NVIDIA's nvidia-smi 550 runs over a staged h100, unmodified, and pins the texts; ours must
print what NVIDIA's prints, step by step. The process holding a GPU keeps its record through the
library as the mock CUDA driver does (records_probe.py hold).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from mokka.core import names
from mokka.core import profile as prof
from tests.native.staged import nvml_build, ok, staged_node  # noqa: F401 (fixtures)

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "records_probe.py")
BUS = "00000000:1A:00.0"
MODE = ["--query-gpu=mig.mode.current,mig.mode.pending", "--format=csv,noheader", "-i", "0"]
ENABLED = f"Enabled MIG Mode for GPU {BUS}\nAll done.\n"
DISABLED = f"Disabled MIG Mode for GPU {BUS}\nAll done.\n"
#: NVIDIA's nvidia-smi 550 on activation status IN_USE.
HELD = ("Warning: MIG mode is in pending {verb} state for GPU 00000000:1A:00.0:In use by another client\n"
        "00000000:1A:00.0 is currently being used by one or more other processes (e.g. CUDA application or "
        "a monitoring application such as another instance of nvidia-smi). Please first kill all processes "
        "using the device and retry the command or reboot the system to make MIG mode effective.\n"
        "All done.\n")


@pytest.fixture(scope="module")
def node(staged_node, tmp_path_factory):
    path = tmp_path_factory.mktemp("mig-mode") / "h100-mig-mode.yaml"
    path.write_bytes(prof.load("h100").text)
    return staged_node(str(path))


def clear(node) -> None:
    """Back to the partitions the profile boots with (MIG disabled on the h100)."""
    path = os.path.join(node.overlay.driver_config, names.MIG_STATE_FILE)
    if os.path.exists(path):
        os.unlink(path)


@pytest.fixture
def fresh(node):
    clear(node)
    yield node
    clear(node)


class Holder:
    """A CUDA process keeping its record on one GPU of the node until closed."""

    def __init__(self, node, gpu: int):
        env = node.env(**{names.ENV_NVML_CONFIG: node.config, "LD_LIBRARY_PATH": node.overlay.lib})
        self.proc = subprocess.Popen([sys.executable, PROBE, "hold", str(gpu), str(1 << 30)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line and json.loads(line)["ret"] == 0, "the holder failed (its stderr is above)"

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture
def holders():
    started: list[Holder] = []
    yield lambda node, gpu: started.append(Holder(node, gpu)) or started[-1]
    for h in started:
        h.close()


def mig_mode_rows(report: str) -> tuple[str, str]:
    """-q's MIG Mode block: (Current, Pending)."""
    m = re.search(r"\n    MIG Mode\n        Current\s+: (\S+)\n        Pending\s+: (\S+)\n", report)
    assert m, report
    return m.group(1), m.group(2)


def test_mig_mode_on_an_idle_gpu_is_current_at_once_without_a_reset(fresh):
    node = fresh
    assert node.run(["-i", "0", "-mig", "1"]).stdout == ENABLED
    assert mig_mode_rows(ok(node.run(["-q", "-i", "0"]))) == ("Enabled", "Enabled")
    assert ok(node.run(MODE)) == "Enabled, Enabled\n"
    assert ok(node.run(["mig", "-cgi", "9", "-C", "-i", "0"])).startswith("Successfully created GPU instance ID")
    ok(node.run(["mig", "-dci", "-i", "0"]))
    ok(node.run(["mig", "-dgi", "-i", "0"]))
    assert node.run(["-i", "0", "-mig", "0"]).stdout == DISABLED
    assert mig_mode_rows(ok(node.run(["-q", "-i", "0"]))) == ("Disabled", "Disabled")


def test_mig_mode_on_a_gpu_a_cuda_process_holds_stays_pending_with_in_use(fresh, holders):
    node = fresh
    holder = holders(node, 0)
    done = node.run(["-i", "0", "-mig", "1"])
    assert (done.returncode, done.stdout) == (0, HELD.format(verb="enable"))
    assert mig_mode_rows(ok(node.run(["-q", "-i", "0"]))) == ("Disabled", "Enabled")
    holder.close()
    assert node.run(["-i", "0", "-mig", "1"]).stdout == ENABLED        # retried once idle
    assert ok(node.run(MODE)) == "Enabled, Enabled\n"


def test_disabling_on_a_held_gpu_stays_pending_the_same_way(fresh, holders):
    node = fresh
    assert node.run(["-i", "0", "-mig", "1"]).stdout == ENABLED
    holder = holders(node, 0)
    done = node.run(["-i", "0", "-mig", "0"])
    assert (done.returncode, done.stdout) == (0, HELD.format(verb="disable"))
    assert ok(node.run(MODE)) == "Enabled, Disabled\n"
    assert ok(node.run(["-r", "-i", "0"])) == f"GPU {BUS} was successfully reset.\nAll done.\n"
    assert ok(node.run(MODE)) == "Disabled, Disabled\n"                 # a reset makes it current
    holder.close()


def test_a_process_on_another_gpu_does_not_hold_this_one(fresh, holders):
    node = fresh
    holders(node, 1)
    assert node.run(["-i", "0", "-mig", "1"]).stdout == ENABLED
    assert ok(node.run(MODE)) == "Enabled, Enabled\n"


def steps(node, run, holders) -> list:
    out = [run(["-i", "0", "-mig", "1"]), run(MODE), run(["-i", "0", "-mig", "0"]), run(MODE)]
    holder = holders(node, 0)
    out += [run(["-i", "0", "-mig", "1"]), run(MODE), run(["-i", "0", "-mig", "0"]), run(MODE)]
    holder.close()
    return [(d.returncode, d.stdout) for d in out]


def test_ours_prints_what_nvidias_prints_idle_and_held(fresh, holders):
    node = fresh
    theirs = steps(node, node.run, holders)
    assert theirs[0] == (0, ENABLED) and theirs[4] == (0, HELD.format(verb="enable"))
    clear(node)
    assert steps(node, node.run_python, holders) == theirs
