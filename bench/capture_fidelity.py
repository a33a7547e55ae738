"""How much of a real node's ``nvidia-smi -q -x`` a mock node reproduces: the built-in
profile of the capture's board (the baseline: what a user had before capture) against
the profile ``mokka profile capture`` writes from it, measured in the same run.

For each capture in ../shared/reference/captures/: the closest built-in board (as the
capture picks it) and the captured profile are each staged by the real agent (--once),
and the leaves of their ``-q -x`` (ours, and NVIDIA's nvidia-smi 550 where
.ci/fetch-runtime.sh fetched it) are compared with the capture's, timestamps aside:

  first GPU    the capture's gpu[0] leaves equal in the mock's gpu[0] (the baseline's measure)
  whole        every capture leaf, the head and every GPU (the captured profile only; a
               built-in board has its own GPU count)
  550 shared   of the capture's leaves 550 prints, those equal (but the few 550, older
               than every capture's driver, words its own way: tests/capture/reports.py)

Target: the captured profile >= 99 % on each. Also the wall time of the capture itself
against ``mokka --help`` through the same interpreter (no target).

    python3 bench/capture_fidelity.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_native_libraries, require_test_environment, time_interleaved  # noqa: E402

require_test_environment()

from mokka.core.capture import closest, record, xmlreport  # noqa: E402
from tests.capture.reports import capture_files, compared, leaves, older_words  # noqa: E402
from tests.native.staged import clean_env, stage_node  # noqa: E402
from tests.peers import read_paths_env  # noqa: E402


TARGET = 0.99


def board_of(text: str) -> str:
    """The built-in profile the capture takes its guesses from: the board's own."""
    report = xmlreport.parse(text)
    gpu = report.gpus[0]
    return closest.closest(record.record(gpu.leaves, gpu.supported_clocks)).name


def equal_share(capture: dict, mock: dict, keys) -> tuple[int, int]:
    keys = list(keys)
    return sum(1 for k in keys if mock.get(k) == capture[k]), len(keys)


def first_gpu(report: dict) -> dict:
    return {k: v for k, v in report.items() if k.startswith("gpu[0]/")}


def shared(capture: dict, theirs: dict) -> list[str]:
    """The capture's leaves 550 prints, but those it words its own way (older_words)."""
    older = set(older_words(capture, theirs))
    return [k for k in capture if k in theirs and k not in older]


def reports(root: str, profile: str, nvidia_smi: str | None) -> tuple[dict, dict | None]:
    """(ours, NVIDIA's 550 or None): the -q -x leaves of a node staged with ``profile``."""
    node, agent = stage_node(root, profile, nvidia_smi)
    try:
        ours = leaves(_stdout(node.run_python(["-q", "-x"])))
        theirs = leaves(_stdout(node.run(["-q", "-x"]))) if nvidia_smi else None
    finally:
        subprocess.run(agent + ["--teardown"], capture_output=True, env=clean_env())
    return ours, theirs


def _stdout(done: subprocess.CompletedProcess) -> str:
    if done.returncode != 0:
        raise SystemExit(f"{done.args[0]} {' '.join(done.args[1:])}: exit {done.returncode}: {done.stderr[-500:]}")
    return done.stdout


def percent(share: tuple[int, int]) -> str:
    return f"{100 * share[0] / share[1]:6.2f} % ({share[0]}/{share[1]})"


def measure(path: str, tmp: str, nvidia_smi: str | None) -> bool:
    with open(path) as f:
        text = f.read()
    capture = compared(leaves(text))
    board = board_of(text)
    name = os.path.basename(path)[:-4]
    captured = os.path.join(tmp, name + ".yaml")
    done = subprocess.run([sys.executable, "-m", "mokka", "profile", "capture", path, "--out", captured],
                          capture_output=True, text=True, env=clean_env())
    _stdout(done)
    base_ours, base_theirs = reports(os.path.join(tmp, name + "-builtin"), board, nvidia_smi)
    ours, theirs = reports(os.path.join(tmp, name + "-captured"), captured, nvidia_smi)
    first = first_gpu(capture)
    rows = [("built-in " + board, "first GPU", equal_share(first, base_ours, first), None),
            ("captured", "first GPU", equal_share(first, ours, first), TARGET),
            ("captured", "whole", equal_share(capture, ours, capture), TARGET)]
    if theirs is not None:
        rows += [("built-in " + board, "550 shared", equal_share(first, base_theirs, shared(first, base_theirs)),
                  None),
                 ("captured", "550 shared", equal_share(capture, theirs, shared(capture, theirs)), TARGET)]
    print(f"{name}  ({len(capture)} leaves, {len(first)} of the first GPU)")
    met = True
    for profile, scope, share, target in rows:
        verdict = ""
        if target is not None:
            ok = share[0] / share[1] >= target
            met = met and ok
            verdict = f"  target >= {100 * target:.0f} %: {'met' if ok else 'MISSED'}"
        print(f"  {profile:<18} {scope:<11} {percent(share)}{verdict}")
    return met


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=5, help="timed runs of the capture (default 5)")
    opts = ap.parse_args()
    files = capture_files()
    if not files:
        raise SystemExit("bench/capture_fidelity.py: no captures in ../shared/reference/captures beside the checkout")
    nvidia_smi = read_paths_env().get("NVIDIA_SMI")
    if nvidia_smi and not os.path.exists(nvidia_smi):
        nvidia_smi = None
    build_native_libraries()
    if nvidia_smi is None:
        print("NVIDIA's nvidia-smi 550 not fetched (bash .ci/fetch-runtime.sh): ours only")
    met = True
    with tempfile.TemporaryDirectory(prefix="mokka-bench-capture-") as tmp:
        for path in files:
            met = measure(path, tmp, nvidia_smi) and met
        env = clean_env()
        argvs = [[sys.executable, "-m", "mokka", "--help"]]
        argvs += [[sys.executable, "-m", "mokka", "profile", "capture", p] for p in files]
        times = [statistics.median(t) for t in time_interleaved(argvs, runs=opts.runs, env=env)]
    print(f"capture wall time, {opts.runs} interleaved runs, medians")
    print(f"  mokka --help                    {times[0]:7.1f} ms")
    for path, t in zip(files, times[1:]):
        print(f"  capture {os.path.basename(path):<22}  {t:7.1f} ms  {t / times[0]:4.2f}x mokka --help")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
