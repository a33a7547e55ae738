"""A board that is MIG-capable but whose partition table is not public (gb300: its profile
declares max_gpu_instances and no GPU instance profiles) reads as a real one does: MIG mode
Disabled, not N/A (a real GB300 node, like the GB200 capture of NVIDIA/k8s-test-infra's
testdata/hardware/qx-gb200.xml, reports <current_mig>Disabled</current_mig>
<pending_mig>Disabled</pending_mig>); enabling it is refused with one line saying why, so no
GPU instance can be created. A board with no MIG at all (l40s) still reads N/A.

NVIDIA's nvidia-smi 550 runs over the staged node; ours must print the same.
"""

from __future__ import annotations

import re

import pytest

from tests.native.staged import nvml_build, ok, staged_node  # noqa: F401 (fixtures)

GB300_BUS = "00000000:0A:00.0"
MODE = ["--query-gpu=mig.mode.current,mig.mode.pending", "--format=csv,noheader", "-i", "0"]
REFUSED = (f"Unable to enable MIG Mode for GPU {GB300_BUS}: Not Supported\n"
           "Treating as warning and moving on.\nAll done.\n")
WHY = ("mock NVML: cannot enable MIG on GPU 0: its board's MIG partition table (the GPU instance "
       "profiles) is not public, so its profile declares none and no GPU instance could be created\n")


@pytest.fixture(scope="module")
def gb300(staged_node):
    return staged_node("gb300")


def mig_mode_rows(report: str) -> tuple[str, str]:
    m = re.search(r"\n    MIG Mode\n        Current\s+: (\S+)\n        Pending\s+: (\S+)\n", report)
    assert m, report
    return m.group(1), m.group(2)


@pytest.mark.parametrize("ours", [False, True], ids=["nvidia's", "ours"])
def test_gb300_mig_mode_reads_disabled(gb300, ours):
    run = gb300.run_python if ours else gb300.run
    assert ok(run(MODE)) == "Disabled, Disabled\n"
    assert mig_mode_rows(ok(run(["-q", "-i", "0"]))) == ("Disabled", "Disabled")
    xml = ok(run(["-q", "-x", "-i", "0"]))
    assert re.search(r"<mig_mode>\s*<current_mig>Disabled</current_mig>\s*<pending_mig>Disabled</pending_mig>"
                     r"\s*</mig_mode>", xml), xml


@pytest.mark.parametrize("ours", [False, True], ids=["nvidia's", "ours"])
def test_gb300_refuses_enabling_mig_with_one_reason(gb300, ours):
    run = gb300.run_python if ours else gb300.run
    done = run(["-i", "0", "-mig", "1"])
    assert (done.returncode, done.stdout, done.stderr) == (0, REFUSED, WHY)
    assert ok(run(MODE)) == "Disabled, Disabled\n"
    assert ok(run(["mig", "-cgi", "19", "-C", "-i", "0"])) == "No MIG-enabled devices found.\n"
    assert ok(run(["-i", "0", "-mig", "0"])) == f"Disabled MIG Mode for GPU {GB300_BUS}\nAll done.\n"


def test_a_board_without_mig_still_reads_not_available(staged_node):
    """The positive control: l40s declares max_gpu_instances 0."""
    node = staged_node("l40s")
    assert ok(node.run(MODE)) == "[N/A], [N/A]\n"
    assert "\n    MIG Mode\n        Current                           : N/A\n" in ok(node.run(["-q", "-i", "0"]))
