"""Every bench in bench/ runs from a plain interpreter: what it lacks stops it with one line
that says what to run first, and a non-zero exit, never a traceback.

Each bench runs as a script under the venv's base interpreter with ``-S`` (no site-packages:
nothing the checkout needs is importable, whatever that interpreter has installed) and an
environment of PATH and HOME only; none gets far enough to measure anything."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

BENCHES = ("agent_stage.py", "capture_fidelity.py", "cuda_driver.py", "first_command.py", "gpm.py", "kwok_nodes.py",
           "metrics_cost.py",
           "mig_lifecycle.py", "mig_list.py", "nri_burst.py", "nri_decision.py", "nri_instructions.py",
           "nri_latency.py",
           "nri_request_path.py", "nri_runtime.py", "nvml_startup.py", "process_records.py", "profile_limits.py",
           "smi_startup.py", "startup.py")
NEEDS_RUNTIME_CACHE = ("mig_lifecycle.py", "mig_list.py", "nri_runtime.py", "nvml_startup.py")
NEEDS_C_COMPILER = ("cuda_driver.py", "mig_lifecycle.py", "nvml_startup.py")
PLAIN_PYTHON = getattr(sys, "_base_executable", sys.executable)


def run_bench(name: str, tmp_path, *args: str, **env) -> subprocess.CompletedProcess:
    minimal = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env}
    return subprocess.run([PLAIN_PYTHON, "-S", os.path.join(REPO, "bench", name), *args], capture_output=True,
                          text=True, env=minimal, cwd=tmp_path, timeout=120)


def one_line(done: subprocess.CompletedProcess) -> str:
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == 2, output
    assert "Traceback" not in output and len(output.splitlines()) == 1, output
    return output


def test_every_bench_is_covered():
    """A new bench joins the tables above, with its prerequisites."""
    found = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "bench", "*.py")))
    assert found == sorted(BENCHES + ("common.py",))


@pytest.mark.parametrize("name", BENCHES)
def test_without_the_test_dependencies_a_bench_says_how_to_make_the_venv(name, tmp_path):
    done = run_bench(name, tmp_path, MOKKA_BENCH_VENV=str(tmp_path / "no-venv"))
    line = one_line(done)
    assert line.startswith(f"bench/{name}: needs the test dependencies (click, protobuf, PyYAML and ")
    assert "python3 -m venv .venv && .venv/bin/python3 -m pip install -e '.[test]'" in line
    assert "or set MOKKA_BENCH_VENV to a venv that has them" in line


def test_a_venv_without_them_is_named_with_its_own_pip(tmp_path):
    venv = tmp_path / "empty-venv"
    subprocess.run([PLAIN_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    line = one_line(run_bench("nri_decision.py", tmp_path, MOKKA_BENCH_VENV=str(venv)))
    assert line.endswith(f"run {venv}/bin/python3 -m pip install -e '.[test]' in {REPO}")


@pytest.mark.parametrize("name", NEEDS_RUNTIME_CACHE)
def test_a_bench_moves_into_the_venv_and_names_the_missing_runtime_cache(name, tmp_path):
    """From the plain interpreter into this venv (the same arguments), then the next thing
    it lacks: the runtime cache .ci/fetch-runtime.sh fetches."""
    empty = tmp_path / "runtime"
    empty.mkdir()
    done = run_bench(name, tmp_path, MOKKA_BENCH_VENV=sys.prefix, MOKKA_RUNTIME_DIR=str(empty))
    line = one_line(done)
    assert line.startswith(f"bench/{name}: needs the runtime cache (")
    assert f"{empty}/paths.env" in line
    assert line.endswith(": run bash .ci/fetch-runtime.sh")


@pytest.mark.parametrize("name", NEEDS_C_COMPILER)
def test_a_bench_that_compiles_its_driver_names_the_missing_compiler(name, tmp_path):
    no_compiler = tmp_path / "bin"
    no_compiler.mkdir()
    done = run_bench(name, tmp_path, MOKKA_BENCH_VENV=sys.prefix, PATH=str(no_compiler))
    assert one_line(done) == f"bench/{name}: needs a C compiler (cc on PATH): run apt-get install gcc"


def test_the_first_command_bench_says_what_it_takes_and_refuses_a_bad_flag_in_one_line(tmp_path):
    """Neither runs the command (each run builds a venv and the zipapp)."""
    helped = run_bench("first_command.py", tmp_path, "--help", MOKKA_BENCH_VENV=sys.prefix)
    assert helped.returncode == 0, helped.stderr
    assert "--runs RUNS" in helped.stdout and "--timeout TIMEOUT" in helped.stdout
    bad = run_bench("first_command.py", tmp_path, "--runs", "x", MOKKA_BENCH_VENV=sys.prefix)
    assert one_line(bad) == (
        "bench/first_command.py: argument --runs: invalid int value: 'x' (see 'bench/first_command.py --help')")
