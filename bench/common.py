"""Shared helpers for the benchmarks: what a bench needs before it starts, a fresh-venv
baseline and timed runs.

A bench runs from any Python 3.11+: ``require_test_environment`` moves it into the
checkout's venv when this interpreter lacks the test dependencies, and each missing
prerequisite stops it with one line naming what to run first (exit 2).
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The venv a bench moves into when the interpreter running it lacks the test dependencies
#: (default: the checkout's .venv, which the README's test command makes).
VENV_VARIABLE = "MOKKA_BENCH_VENV"
#: A bench's exit status when something it needs is missing (1 is a missed target).
MISSING_PREREQUISITE = 2


def missing_prerequisite(what: str, fix: str):
    """Stop the bench: one line on stderr naming what it needs and what to run first."""
    bench = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    print(f"{bench}: needs {what}: {fix}", file=sys.stderr)
    raise SystemExit(MISSING_PREREQUISITE)


def _missing_distributions() -> list[str]:
    """pyproject.toml's runtime and test dependencies this interpreter does not have."""
    import importlib.metadata
    import tomllib
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    missing = []
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        name = re.split(r"[\s;\[=<>!~]", requirement, maxsplit=1)[0]
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def require_test_environment() -> None:
    """Continue only in an interpreter with the test dependencies: this one, or the venv of
    $MOKKA_BENCH_VENV (default: the checkout's .venv), which the bench re-executes into with
    the same arguments. Without either: one line saying how to make that venv."""
    if sys.version_info < (3, 11):
        missing_prerequisite(f"Python 3.11 or newer (this is {sys.version.split()[0]})",
                             "run it with python3.11 or newer")
    missing = _missing_distributions()
    if not missing:
        return
    venv = os.environ.get(VENV_VARIABLE) or os.path.join(REPO, ".venv")
    python = os.path.join(venv, "bin", "python3")
    inside = os.path.realpath(sys.prefix) == os.path.realpath(venv)
    if not inside and os.access(python, os.X_OK):
        os.execv(python, [python, os.path.abspath(sys.argv[0]), *sys.argv[1:]])
    named = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    if inside:
        fix = f"run {python} -m pip install -e '.[test]' in {REPO}"
    else:
        fix = (f"run python3 -m venv .venv && .venv/bin/python3 -m pip install -e '.[test]' in {REPO}, "
               f"or set {VENV_VARIABLE} to a venv that has them")
    missing_prerequisite(f"the test dependencies ({named} not installed for {sys.executable})", fix)


def runtime_peer(key: str) -> str:
    """The file .ci/fetch-runtime.sh fetched under ``key`` of its paths.env (NVIDIA_SMI, ...)."""
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from tests.integration.runtime import runtime_dir
    from tests.peers import read_paths_env
    path = read_paths_env().get(key)
    if not path or not os.path.exists(path):
        missing_prerequisite(f"the runtime cache ({key} in {runtime_dir() / 'paths.env'})",
                             "run bash .ci/fetch-runtime.sh")
    return path


def c_compiler() -> str:
    """The C compiler the bench builds its small timing driver with."""
    compiler = shutil.which("cc")
    if compiler is None:
        missing_prerequisite("a C compiler (cc on PATH)", "run apt-get install gcc")
    return compiler


def fresh_venv_python() -> str:
    """The python of a new, empty virtual environment (the baseline interpreter)."""
    path = os.path.join(tempfile.mkdtemp(prefix="mokka-bench-venv-"), "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True)
    return os.path.join(path, "bin", "python")


def time_command(argv: list[str], runs: int = 30, warmup: int = 3, env=None) -> list[float]:
    """Wall times in ms of ``runs`` runs after ``warmup`` untimed ones."""
    for _ in range(warmup):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        times.append((time.perf_counter() - start) * 1000)
    return times


def time_interleaved(argvs: list[list[str]], runs: int = 30, env=None) -> list[list[float]]:
    """Wall times in ms of each argv, run in turns (order flipped every round), so a busy
    machine's swings hit every command alike."""
    for argv in argvs:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    times: list[list[float]] = [[] for _ in argvs]
    for i in range(runs):
        order = list(range(len(argvs)))
        for k in (order if i % 2 == 0 else order[::-1]):
            start = time.perf_counter()
            subprocess.run(argvs[k], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                           env=env)
            times[k].append((time.perf_counter() - start) * 1000)
    return times


def build_native_libraries() -> None:
    """This machine's native libraries into build/native, where the agent run from this
    checkout finds them (native/build.py skips a library whose inputs are unchanged)."""
    subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"), "-q",
                    "--arch", os.uname().machine], check=True)


def build_zipapp() -> str:
    """dist/mokka's build into a temp dir, by this interpreter (the one with shiv and the
    build pins), not whatever python3 comes first on PATH."""
    out = os.path.join(tempfile.mkdtemp(prefix="mokka-bench-"), "mokka")
    subprocess.run([os.path.join(REPO, "shivfile"), out], check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, PYTHON=sys.executable))
    return out


def report(label: str, times: list[float], baseline_ms: float, target: float | None = None) -> None:
    median = statistics.median(times)
    ratio = median / baseline_ms
    verdict = ""
    if target is not None:
        verdict = f"  target <= {target:.1f}x: {'met' if ratio <= target else 'MISSED'}"
    print(f"{label:<44} median {median:7.1f} ms  p90 {sorted(times)[int(len(times) * 0.9) - 1]:7.1f} ms"
          f"  = {ratio:4.2f}x baseline{verdict}")
