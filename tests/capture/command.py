"""``python -m mokka profile capture`` as a user runs it, and what a run cost the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from tests.conftest import REPO
from tests.peak import Launched

#: Generous: a run that takes this long has hung (a capture of a real report takes about 1 s).
HANG_GUARD_SECONDS = 120


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mokka", "profile", "capture", *args]


def env() -> dict:
    return dict(os.environ, PYTHONPATH=REPO)


def run(*args: str, stdin: str | bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), capture_output=True, env=env(), input=stdin,
                          text=not isinstance(stdin, bytes), timeout=HANG_GUARD_SECONDS)


@dataclass(frozen=True)
class Measured:
    returncode: int
    stdout: str
    stderr: str
    max_rss_kib: int              # the run's own peak resident set
    seconds: float                # wall time, printed by the tests that care, never asserted


def run_measured(*args: str) -> Measured:
    """One run, with its own peak RSS (tests/peak.py: not the test process's size);
    a run past HANG_GUARD_SECONDS has hung and fails the test."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        status, max_rss = Launched(command(*args), stdout=out, stderr=err, env=env()).finish(HANG_GUARD_SECONDS)
        seconds = time.monotonic() - start
        assert status is not None, f"profile capture {' '.join(args)}: still running after {HANG_GUARD_SECONDS} s"
        out.seek(0)
        err.seek(0)
        return Measured(status, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                        max_rss // 1024, seconds)
