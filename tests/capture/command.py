"""``python -m mokka profile capture`` as a user runs it, and what a run cost the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from tests.conftest import REPO

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
    max_rss_kib: int              # the run's peak resident set (getrusage of the child)
    seconds: float                # wall time, printed by the tests that care, never asserted


def run_measured(*args: str) -> Measured:
    """One run, with its own peak RSS (wait4 of this child alone, not of every child
    this test process ever had); killed past HANG_GUARD_SECONDS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(command(*args), stdout=out, stderr=err, env=env())
        guard = threading.Timer(HANG_GUARD_SECONDS, proc.kill)
        guard.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            guard.cancel()
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)      # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return Measured(proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                        usage.ru_maxrss, seconds)
