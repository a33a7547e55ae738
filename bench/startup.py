"""Start-up cost of the zipapp: `mokka --help`, `mokka render-cdi` and `mokka profiles`
against a fresh-venv `python -c pass`, measured in the same run, and `mokka profiles`
against `mokka --help` in turns.

    python3 bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (build_zipapp, fresh_venv_python, report, require_test_environment, time_command,  # noqa: E402
                    time_interleaved)

require_test_environment()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    app = build_zipapp()
    env = dict(os.environ, SHIV_ROOT=os.path.join(os.path.dirname(app), "shiv-root"))
    baseline = statistics.median(time_command([fresh_venv_python(), "-c", "pass"], args.runs))
    print(f"{'baseline: fresh venv python -c pass':<44} median {baseline:7.1f} ms")
    report("mokka --help", time_command([app, "--help"], args.runs, env=env), baseline)
    report("mokka render-cdi (gb300)", time_command([app, "render-cdi"], args.runs, env=env), baseline)
    report("mokka profiles", time_command([app, "profiles"], args.runs, env=env), baseline)
    # A listing loads nothing it does not print: no slower than --help, measured in turns.
    helps, listings = time_interleaved([[app, "--help"], [app, "profiles"]], args.runs, env=env)
    ratio = statistics.median(listings) / statistics.median(helps)
    print(f"{'mokka profiles / mokka --help (in turns)':<44} {ratio:.2f}x  target <= 1.0x: "
          f"{'met' if ratio <= 1.0 else 'MISSED'}  (median of per-run ratios "
          f"{statistics.median(p / h for p, h in zip(listings, helps)):.2f}x)")


if __name__ == "__main__":
    main()
