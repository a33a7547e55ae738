"""What printing KWOK nodes costs: ``mokka kwok-nodes --count 1000`` against ``mokka --help``.

Builds the zipapp into a temp dir, then times, in turns (medians of N runs each):

  baseline      mokka --help                              (the zipapp's own start)
  1000 nodes    mokka kwok-nodes --profile h100 --count 1000
  1000 MIG      mokka kwok-nodes --profile h100 --count 1000 --mig-layout all-balanced
                --mig-strategy mixed

Target (issue 37): 1,000 nodes print in under 2 s; the ratio to the baseline is printed
beside it.

    python bench/kwok_nodes.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from common import build_zipapp, report, require_test_environment, time_interleaved  # noqa: E402

require_test_environment()

TARGET_MS = 2000.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=10)
    args = ap.parse_args()
    mokka = build_zipapp()
    cases = {
        "mokka --help (baseline)": [mokka, "--help"],
        "kwok-nodes --count 1000": [mokka, "kwok-nodes", "--profile", "h100", "--count", "1000"],
        "kwok-nodes --count 1000, MIG mixed": [mokka, "kwok-nodes", "--profile", "h100", "--count",
                                               "1000", "--mig-layout", "all-balanced",
                                               "--mig-strategy", "mixed"],
    }
    times = time_interleaved(list(cases.values()), runs=args.runs)
    baseline = statistics.median(times[0])
    print(f"nproc {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, {args.runs} runs each")
    for (label, _), run in zip(cases.items(), times):
        report(label, run, baseline)
    for (label, _), run in list(zip(cases.items(), times))[1:]:
        median = statistics.median(run)
        print(f"{label}: {median:.0f} ms against the target {TARGET_MS:.0f} ms: "
              f"{'met' if median <= TARGET_MS else 'MISSED'}")


if __name__ == "__main__":
    main()
