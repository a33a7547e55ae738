"""NVIDIA's nvidia-smi 550 and ours over the same library agree: on every state of the
engine corpus (visibility, device nodes, topology, fabric auto, overrides, moving
readings), and on lost GPUs and bad ``-i`` values, message texts and exit codes.

Both read one library (this checkout's build): NVIDIA's through LD_LIBRARY_PATH, ours
as ``python -m mokka nvidia-smi``, which loads the package's own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mokka.core import names
from tests.corpus import engine_cases as corpus
from tests.conftest import REPO
from tests.corpus.dynamic_cases import PINNED_CLOCK
from tests.native import mig_nodes as mn
from tests.native.smi_compare import NA, blackwell_unknown, gpu_matrix, parse_q, xml_leaves
from tests.native.staged import nvml_build  # noqa: F401 (fixture)
from tests.peers import peer

QUERY = ("index,uuid,name,pci.bus_id,memory.total,memory.used,memory.free,temperature.gpu,power.draw,"
         "utilization.gpu,utilization.memory,pstate,clocks.sm,ecc.mode.current,compute_cap")
LOST_MESSAGE = "GPU is lost.  Reboot the system to recover this GPU"
NO_DEVICES = "No devices were found\n"


def run_both(lib: str, env: dict, args: list) -> tuple:
    """(NVIDIA's result, ours) for the same arguments over the same files."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "NODE_NAME", "LD_"))}
    base.update({names.ENV_NVML_CLOCK: str(PINNED_CLOCK)}, **env)
    theirs = subprocess.run([peer("NVIDIA_SMI"), *args], capture_output=True, text=True, timeout=60,
                            env=dict(base, LD_LIBRARY_PATH=os.path.dirname(lib)))
    ours = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", *args], capture_output=True,
                          text=True, timeout=60, env=dict(base, PYTHONPATH=REPO))
    return theirs, ours


def common_values(theirs: dict, ours: dict) -> list:
    return [k for k in theirs if k in ours and theirs[k] not in NA and ours[k] not in NA
            and k[-1] not in {"timestamp", "display_mode", "Timestamp", "Display Mode"}
            and not (k[-1] in ("product_architecture", "Product Architecture")
                     and blackwell_unknown(ours[k], theirs[k]))]


def assert_values_agree(theirs: dict, ours: dict, at_least: int) -> None:
    keys = common_values(theirs, ours)
    assert len(keys) >= at_least, len(keys)
    mismatches = [f"{k}: ours {ours[k]!r} nvidia {theirs[k]!r}" for k in keys if ours[k] != theirs[k]]
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("case", corpus.CASES, ids=corpus.IDS)
def test_both_agree_over_every_corpus_state(case, nvml_build, tmp_path):
    env = corpus.stage(case, str(tmp_path))
    count = len(case.visible)
    theirs, ours = run_both(nvml_build, env, ["-L"])
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), (ours.stderr, theirs.stderr)
    theirs, ours = run_both(nvml_build, env, [f"--query-gpu={QUERY}", "--format=csv,noheader"])
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)
    if not count:
        assert (theirs.returncode, theirs.stdout) == (6, NO_DEVICES)
        return
    theirs, ours = run_both(nvml_build, env, ["-q", "-x"])
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert_values_agree(xml_leaves(theirs.stdout), xml_leaves(ours.stdout), 40 * count)
    theirs, ours = run_both(nvml_build, env, ["-q"])
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert_values_agree(parse_q(theirs.stdout), parse_q(ours.stdout), 40 * count)
    for args in (["topo", "-m"], ["nvlink", "-s"]):
        theirs, ours = run_both(nvml_build, env, args)
        assert ours.returncode == theirs.returncode == 0, args
        if args[0] == "topo":
            assert gpu_matrix(ours.stdout) == gpu_matrix(theirs.stdout)
        else:
            assert ours.stdout == theirs.stdout


LOST = {3: "failure: {lost: true}\n", 5: "failure: {lost: true}\n"}
H100_4 = "GPU-01000100-0000-0000-0000-000000000004"


@pytest.mark.parametrize("lost, args", [
    (LOST, ["-L"]),
    (LOST, []),
    (LOST, ["-q"]),
    (LOST, ["-q", "-x"]),
    (LOST, ["--query-gpu=index,name", "--format=csv"]),
    (LOST, ["--query-compute-apps=pid", "--format=csv"]),
    (LOST, ["topo", "-m"]),
    (LOST, ["nvlink", "-s"]),
    (LOST, ["nvlink", "-s", "-i", "1"]),
    (LOST, ["-i", "3", "-q"]),
    (LOST, ["-i", "5", "--query-gpu=index", "--format=csv"]),
    (LOST, ["-i", "0,3", "--query-gpu=index", "--format=csv"]),
    (LOST, ["-i", "4,2", "--query-gpu=index,uuid", "--format=csv,noheader"]),
    (LOST, ["-i", "2,2", "--query-gpu=index", "--format=csv,noheader"]),
    (LOST, ["-i", "9", "-q"]),
    (LOST, ["-i", "9"]),
    (LOST, ["-i", H100_4, "--query-gpu=index", "--format=csv"]),
    (LOST, ["-r"]),
    (LOST, ["-r", "-i", "3"]),
    (None, ["-i", "9", "-q"]),
    (None, ["-i", "9", "--query-gpu=index", "--format=csv"]),
    (None, ["-i", "8", "--query-gpu=index", "--format=csv"]),
    (None, ["-i", "x", "-q"]),
    (None, ["-i", "-1", "-q"]),
    (None, ["-i", "0", "-L"]),
    (None, ["-i", "9", "-L"]),
    (None, ["-i", "0,9", "--query-gpu=index", "--format=csv,noheader"]),
    (None, ["-i", H100_4, "--query-gpu=index", "--format=csv,noheader"]),
    (None, ["nvlink", "-s", "-i", "9"]),
    (None, ["-r", "-i", "9"]),
    (None, ["-i", ",", "-q"]),
    (None, ["-i", "", "--query-gpu=index", "--format=csv,noheader"]),
    (None, ["-i", " , ", "--query-gpu=index", "--format=csv,noheader"]),
    (None, ["mig", "-lgi", "-i", ","]),
    (None, ["foo"]),
    (None, ["-q", "foo"]),
    (None, ["-q", "nvlink", "-s"]),
    (None, ["-i", "0", "--bogus"]),
    (None, ["-q", "-d", "NOPE"]),
    (None, ["-q", "-d", "MEMORY,NOPE"]),
    (None, ["-d", "MEMORY"]),
], ids=lambda v: " ".join(v) if isinstance(v, list) else ("lost 3,5" if v else "none lost"))
def test_lost_gpus_and_ids_print_as_nvidias(lost, args, nvml_build, tmp_path):
    env = corpus.stage(corpus.Case("ids", "h100", (), overrides=lost), str(tmp_path))
    theirs, ours = run_both(nvml_build, env, args)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), (ours.stderr, theirs.stderr)


def test_a_lost_gpu_is_named_as_nvidia_names_it(nvml_build, tmp_path):
    """The texts of the table above, pinned: the handle message, its exit status 15."""
    env = corpus.stage(corpus.Case("lost", "h100", (), overrides=LOST), str(tmp_path))
    _, ours = run_both(nvml_build, env, ["-q"])
    assert (ours.returncode, ours.stdout) == (
        15, f"Unable to determine the device handle for GPU3: {LOST_MESSAGE}\n\n\n")
    _, ours = run_both(nvml_build, env, ["-i", "9", "-q"])
    assert (ours.returncode, ours.stdout) == (255, f"Problem with GPU 3: {LOST_MESSAGE}\n\n\n")


@pytest.mark.parametrize("ids", ["2", "2,6", H100_4])
def test_one_gpu_of_several_still_counts_every_gpu_attached(ids, nvml_build, tmp_path):
    env = corpus.stage(corpus.Case("attached", "h100", ()), str(tmp_path))
    theirs, ours = run_both(nvml_build, env, ["-q", "-i", ids])
    assert ours.returncode == theirs.returncode == 0
    a, b = parse_q(theirs.stdout), parse_q(ours.stdout)
    assert {k[0] for k in a} == {k[0] for k in b} and len({k[0] for k in b}) == len(ids.split(","))
    assert_values_agree(a, b, 40 * len(ids.split(",")))
    assert [ln for ln in ours.stdout.splitlines() if ln.startswith("Attached GPUs")] == [
        "Attached GPUs                             : 8"]
    theirs, ours = run_both(nvml_build, env, ["-q", "-x", "-i", ids])
    assert "<attached_gpus>8</attached_gpus>" in theirs.stdout and "<attached_gpus>8</attached_gpus>" in ours.stdout


def test_both_print_the_boards_max_customer_boost_clock(nvml_build, tmp_path):
    env = mn.board(str(tmp_path), "a100")
    theirs, ours = run_both(nvml_build, env, ["-q", "-d", "CLOCK", "-i", "0"])
    boost = "    Max Customer Boost Clocks\n        Graphics                          : 1410 MHz\n"
    assert (theirs.returncode, ours.returncode) == (0, 0), theirs.stderr + ours.stderr
    assert boost in theirs.stdout and boost in ours.stdout
