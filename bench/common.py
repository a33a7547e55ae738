"""Shared helpers for the benchmarks: a fresh-venv baseline and timed runs."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def build_zipapp() -> str:
    out = os.path.join(tempfile.mkdtemp(prefix="mokka-bench-"), "mokka")
    subprocess.run([os.path.join(REPO, "shivfile"), out], check=True, stdout=subprocess.DEVNULL)
    return out


def report(label: str, times: list[float], baseline_ms: float, target: float | None = None) -> None:
    median = statistics.median(times)
    ratio = median / baseline_ms
    verdict = ""
    if target is not None:
        verdict = f"  target <= {target:.1f}x: {'met' if ratio <= target else 'MISSED'}"
    print(f"{label:<44} median {median:7.1f} ms  p90 {sorted(times)[int(len(times) * 0.9) - 1]:7.1f} ms"
          f"  = {ratio:4.2f}x baseline{verdict}")
