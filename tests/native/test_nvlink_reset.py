"""nvmlDeviceResetNvLinkErrorCounters on a staged h100: one process resets a link, every other
process reads its error counters 0 (the counter, the field values, both nvidia-smis'
``nvlink -e``), the other links keep theirs, ``ctl nvlink`` counts on from the reset, and a GPU
reset clears the counters and the reset's mark with them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.native import mig_nodes as mn
from tests.native.conftest import REPO, clean_env
from tests.native.test_error_injection import read
from tests.native.test_health_controller import ctl, python

RESET = """
import sys, pynvml as n
n.nvmlInit()
n.nvmlDeviceResetNvLinkErrorCounters(n.nvmlDeviceGetHandleByIndex(0), int(sys.argv[1]))
print("reset")
"""

# The same through ctypes, as a caller without pynvml makes it: the return code.
RESET_CTYPES = """
import ctypes, sys
lib = ctypes.CDLL("libnvidia-ml.so.1")
assert lib.nvmlInit_v2() == 0
handle = ctypes.c_void_p()
assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0
print(lib.nvmlDeviceResetNvLinkErrorCounters(handle, ctypes.c_uint(int(sys.argv[1]))))
"""

LINKS = """
import json, pynvml as n
n.nvmlInit()
g = n.nvmlDeviceGetHandleByIndex(0)
out = {link: [n.nvmlDeviceGetNvLinkErrorCounter(g, link, c) for c in range(5)] for link in (2, 3)}
ids = [(161, 2), (162, 2), (163, 2), 38, 52, 59]   # replay, recovery, CRC of link 2; totals of flit CRC, replay, recovery
out["fields"] = [v.value.ullVal for v in n.nvmlDeviceGetFieldValues(g, ids)]
print(json.dumps(out))
"""


@pytest.fixture
def h100(tmp_path) -> dict:
    return mn.board(str(tmp_path), "h100")


def run(lib: str, env: dict, code: str, *args: str) -> str:
    proc = python(lib, env, code, *args)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out


def link_rows(text: str, link: int) -> list:
    return [line.strip() for line in text.splitlines() if line.strip().startswith(f"Link {link}:")]


@pytest.mark.parametrize("reset", [RESET, RESET_CTYPES], ids=["pynvml", "ctypes"])
def test_a_link_reset_in_one_process_reads_zero_in_another(nvml_lib, h100, reset):
    for args in (("2", "crc-flit", "--count", "5"), ("2", "replay"), ("2", "recovery", "--count", "4"),
                 ("3", "recovery", "--count", "2")):
        assert ctl(nvml_lib, h100, "nvlink", "0", *args).returncode == 0
    assert read(nvml_lib, h100, LINKS) == {"2": [1, 4, 5, 0, 0], "3": [0, 2, 0, 0, 0], "fields": [1, 4, 5, 5, 1, 6]}
    assert run(nvml_lib, h100, reset, "2").strip() in ("reset", "0")
    assert read(nvml_lib, h100, LINKS) == {"2": [0, 0, 0, 0, 0], "3": [0, 2, 0, 0, 0], "fields": [0, 0, 0, 0, 0, 2]}
    theirs = mn.nvidia_smi(nvml_lib, h100, "nvlink", "-e", "-i", "0")             # NVIDIA's 550
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert link_rows(theirs.stdout, 2) == ["Link 2: Replay Errors: 0", "Link 2: Recovery Errors: 0",
                                           "Link 2: CRC Errors: 0"]
    assert link_rows(theirs.stdout, 3)[1] == "Link 3: Recovery Errors: 2"
    ours = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", "nvlink", "-e", "-i", "0"],
                          env=clean_env(nvml_lib, h100), capture_output=True, text=True, timeout=60, cwd=REPO)
    assert (ours.returncode, ours.stdout) == (0, theirs.stdout), ours.stderr


def test_injections_after_a_reset_count_on_from_zero_and_a_gpu_reset_drops_the_mark(nvml_lib, h100):
    assert ctl(nvml_lib, h100, "nvlink", "0", "2", "crc-flit", "--count", "5").returncode == 0
    run(nvml_lib, h100, RESET, "2")
    again = ctl(nvml_lib, h100, "nvlink", "0", "2", "crc-flit", "--count", "3")
    assert (again.returncode, again.stdout) == (0, "GPU 0 (GPU-01000100-0000-0000-0000-000000000000): "
                                                   "NVLink 2 crc-flit errors 3\n"), again.stderr
    assert read(nvml_lib, h100, LINKS)["2"] == [0, 0, 3, 0, 0]
    assert mn.nvidia_smi(nvml_lib, h100, "-r", "-i", "0").returncode == 0
    assert read(nvml_lib, h100, LINKS)["2"] == [0, 0, 0, 0, 0]
    assert ctl(nvml_lib, h100, "nvlink", "0", "2", "crc-flit", "--count", "7").returncode == 0
    assert read(nvml_lib, h100, LINKS)["2"] == [0, 0, 7, 0, 0]        # not 7 less the 5 reset before


@pytest.mark.parametrize("profile, link, code", [("h100", "18", "2"), ("t4", "0", "3")])   # INVALID_ARGUMENT, NOT_SUPPORTED
def test_resetting_a_link_the_gpu_lacks_or_a_gpu_without_nvlink_fails_as_nvml_says(nvml_lib, tmp_path, profile,
                                                                                   link, code):
    node = mn.board(str(tmp_path), profile)
    assert run(nvml_lib, node, RESET_CTYPES, link).strip() == code
