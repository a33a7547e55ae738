"""``mokka fabricmanager`` as a real process: the marker's lifecycle."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from helpers import REPO
from tests.waiting import wait_until

from mokka.core import names

MARKER = names.FABRICMANAGER_READY


def start(state_dir, *args, log=None):
    return subprocess.Popen([sys.executable, "-m", "mokka", "fabricmanager", "--state-dir", str(state_dir),
                             "--log-format", "plain", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=log or subprocess.DEVNULL)


def test_marker_written_reasserted_and_removed_on_sigterm(tmp_path):
    state = tmp_path / "fm"
    proc = start(state, "--interval", "0.1")
    try:
        wait_until(lambda: (state / MARKER).exists(), what="the marker")
        (state / MARKER).unlink()
        wait_until(lambda: (state / MARKER).exists(), what="the marker re-asserted")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert os.listdir(state) == []
    finally:
        proc.kill()


def test_sigterm_during_the_delay_never_writes_the_marker(tmp_path):
    state, log = tmp_path / "fm", tmp_path / "fm.log"
    with open(log, "wb") as f:
        proc = start(state, "--delay", "600", log=f)
    try:
        wait_until(lambda: "initializing" in log.read_text(), what="the delay to start")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert os.listdir(state) == []
    finally:
        proc.kill()


def test_fail_removes_a_stale_marker_and_exits_1_with_one_line(tmp_path):
    state = tmp_path / "fm"
    state.mkdir()
    (state / MARKER).write_text("left by a killed run\n")
    res = subprocess.run([sys.executable, "-m", "mokka", "fabricmanager", "--state-dir", str(state), "--fail",
                          "--log-level", "error"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert res.stderr.splitlines() == [
        f"fabricmanager: failed to start (--fail): GPUs with fabric state auto stay IN_PROGRESS; "
        f"no {MARKER} in {state}"]
    assert os.listdir(state) == []


def test_environment_configures_it_like_the_flags(tmp_path):
    state = tmp_path / "from-env"
    res = subprocess.run([sys.executable, "-m", "mokka", "fabricmanager", "--log-level", "error"], cwd=REPO,
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, names.ENV_FABRICMANAGER_STATE_DIR: str(state),
                              names.ENV_FABRICMANAGER_FAIL: "true"})
    assert res.returncode == 1 and str(state) in res.stderr
