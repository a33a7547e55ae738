"""A workload's process holding an exclusive flock, as any container can on driver/config."""

from __future__ import annotations

import contextlib
import subprocess
import sys


@contextlib.contextmanager
def flock_held(path: str):
    """A separate process holding flock on ``path`` (a directory or file) while the block runs;
    yields it (its pid is what a refusal must name)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys\n"
         f"fd = os.open({path!r}, os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(10)
