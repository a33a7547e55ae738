"""Start-up cost of the zipapp: `mokka --help` and `mokka render-cdi` against a
fresh-venv `python -c pass`, measured in the same run.

    python3 bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_zipapp, fresh_venv_python, report, time_command  # noqa: E402


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


if __name__ == "__main__":
    main()
