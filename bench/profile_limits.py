"""What refusing a hostile profile costs, against loading the default built-in profile in the
same run: the alias bomb, 10 000 nested mappings, a self-referencing alias, and a file of
4 MiB of scalars (the size limit). In-process, so the figures are the loader's alone.

    python3 bench/profile_limits.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import require_test_environment  # noqa: E402

require_test_environment()

from mokka.core import names  # noqa: E402
from mokka.core.profile import ProfileError, parse, read  # noqa: E402

HEAD = b'version: "1.0"\nsystem:\n  driver_version: "550.1.1"\n'
BOMB = HEAD + b"device_defaults:\n  mig:\n    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
    b"    a%d: &a%d [" % (i, i) + b", ".join([b"*a%d" % (i - 1)] * 10) + b"]\n" for i in range(1, 10))
NESTED = HEAD + b"x: " + b"{a: " * 10_000 + b"1" + b"}" * 10_000 + b"\n"
CYCLE = HEAD + b"device_defaults: &a {name: x, mig: *a}\n"
LINE = b"- 1234567\n"
FLAT = b"x:\n" + LINE * ((names.MAX_DOCUMENT_BYTES - 3) // len(LINE))


def ms(text: bytes, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            parse(text)
        except ProfileError:
            pass
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    baseline = ms(read(names.DEFAULT_PROFILE)[1], args.runs)
    print(f"{'baseline: load ' + names.DEFAULT_PROFILE:<40} median {baseline:8.2f} ms")
    for name, text in (("alias bomb (refused)", BOMB), ("10 000 nested (refused)", NESTED),
                       ("self-referencing alias (refused)", CYCLE),
                       ("4 MiB of scalars (refused)", FLAT)):
        t = ms(text, args.runs)
        print(f"{name:<40} median {t:8.2f} ms  {t / baseline:6.2f}x baseline")


if __name__ == "__main__":
    main()
