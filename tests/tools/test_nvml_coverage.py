"""tools/nvml_coverage.py counts which of a list's NVML functions the library answers."""

from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "nvml_coverage.py")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, timeout=120)


def test_counts_answered_stubbed_and_unknown_names(tmp_path):
    listed = tmp_path / "calls.txt"
    listed.write_text("# what a consumer calls\n"
                      "nvmlDeviceGetPcieSpeed\n"
                      "nvmlDeviceGetSamples\n"
                      "nvmlDeviceGetName   # a comment after a name\n"
                      "\n"
                      "nvmlDeviceGetNvLinkUtilizationCounter\n"
                      "nvmlDeviceGetVgpuMetadata\n"
                      "nvmlNoSuchCall\n")
    done = run(str(listed), "--stubbed")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("3 of 5 answer (60 %); 2 stubbed NOT_SUPPORTED; 1 not in nvml.h\n"
                           "nvmlDeviceGetNvLinkUtilizationCounter\nnvmlDeviceGetVgpuMetadata\n")
    done = run(str(listed), "--no-vgpu")
    assert done.stdout == "3 of 4 answer (75 %); 1 stubbed NOT_SUPPORTED; 1 not in nvml.h\n"


def test_an_unreadable_list_is_a_usage_error(tmp_path):
    done = run(str(tmp_path / "missing.txt"))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (f"nvml_coverage.py: error: cannot read {tmp_path / 'missing.txt'}: "
                                            "No such file or directory; give a text file of NVML function names")


def test_a_root_that_is_no_checkout_is_a_usage_error(tmp_path):
    listed = tmp_path / "calls.txt"
    listed.write_text("nvmlDeviceGetName\n")
    done = run(str(listed), "--root", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (f"nvml_coverage.py: error: --root {tmp_path}: no "
                                            "native/nvml/gen_stubs.py there; give a Mokka checkout")
