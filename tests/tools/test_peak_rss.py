"""The peak-RSS measurement the memory bounds rest on is the child's own, however large
the test process has grown (a long suite's pytest holds hundreds of MiB)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.peak import Launched

# Grows a test process to hundreds of MiB to show the child's peak is its own.
pytestmark = pytest.mark.slow

SMALL_CHILD = [sys.executable, "-I", "-S", "-c", "x = bytearray(20 << 20); x[::4096] = b'1' * len(x[::4096])"]


def test_a_small_child_of_a_large_parent_reports_its_own_peak():
    ballast = bytearray(400 << 20)
    ballast[::4096] = b"1" * len(ballast[::4096])           # resident, not only reserved
    status, max_rss = Launched(SMALL_CHILD, stdout=subprocess.DEVNULL).finish(60)
    assert status == 0
    assert 20 << 20 <= max_rss < 100 << 20, f"{max_rss >> 20} MiB"
    del ballast


def test_a_child_past_its_timeout_is_killed_with_its_launcher():
    child = Launched([sys.executable, "-c", "import time; time.sleep(60)"])
    assert child.finish(0.5) == (None, 0)


def test_a_signalled_child_reports_the_signal():
    status, _ = Launched([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]).finish(60)
    assert status == -11
