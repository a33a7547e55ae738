"""One agent per host root: a second agent, --once or --teardown refuses with one line naming
the holder's pid and changes nothing; the holder's teardown still leaves the root as found."""

from __future__ import annotations

import os

import pytest
from helpers import AgentProcess, profile_bytes, run_agent
from tests.waiting import wait_until
from treelist import diff, listing

from mokka.core import names
from mokka.core.overlay import under

SECOND = [("--once",), ("--teardown",), ("--resync-interval", "0")]


def test_a_second_agent_on_the_same_root_refuses_and_changes_nothing(scratch):
    root, outside, procs = scratch
    path = os.path.join(outside, "p.yaml")
    with open(path, "wb") as f:
        f.write(profile_bytes("t4", 2))
    before = listing(root)
    first = AgentProcess(root, "--profile", path, "--resync-interval", "0", log_dir=outside)
    procs.append(first)
    first.wait_staged()
    wait_until(lambda: any(line.get("msg") == "converged" for line in first.log_lines()),
               what="the first agent's Apply wave")
    # Its daemons start after Apply: the fabricmanager's marker is the last thing it writes.
    marker = os.path.join(under(root, names.OVERLAY_HOST_PATH), names.DRIVER_FABRIC_STATE_DIR,
                          names.FABRICMANAGER_READY)
    wait_until(lambda: os.path.exists(marker), what="the first agent's fabricmanager marker")
    staged = listing(root)
    lock = under(root, names.AGENT_LOCK_PATH)
    for mode in SECOND:
        r = run_agent(root, *mode, "--profile", "a100", "--health-addr", "")
        assert r.returncode == 1, (mode, r.stderr)
        assert "Traceback" not in r.stderr
        assert r.stderr.strip() == (f"node-agent: another node-agent (pid {first.proc.pid}) holds "
                                    f"{lock}: one agent per host root; stop it first, or pass "
                                    "another --host-root"), mode
        after = listing(root)
        assert after == staged, (mode, diff(staged, after))
    first.assert_alive()
    assert first.terminate() == 0
    after = listing(root)
    assert after == before, diff(before, after)


def test_the_lock_is_free_again_once_the_holder_exits(scratch):
    root, _, _ = scratch
    before = listing(root)
    assert run_agent(root, "--once", "--profile", "t4").returncode == 0
    assert os.path.exists(under(root, names.AGENT_LOCK_PATH))    # recorded; teardown removes it
    assert run_agent(root, "--once", "--profile", "t4").returncode == 0
    assert run_agent(root, "--teardown").returncode == 0
    after = listing(root)
    assert after == before, diff(before, after)


@pytest.mark.parametrize("mode", ["--once", "--teardown"])
def test_a_refused_run_on_a_fresh_root_leaves_it_empty(tmp_path, mode):
    """Positive control for 'changes nothing': a bad profile on a fresh root writes nothing."""
    root = tmp_path / "root"
    root.mkdir()
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: [\n")
    r = run_agent(str(root), mode, "--profile", str(bad), "--health-addr", "")
    if mode == "--once":
        assert r.returncode == 1 and r.stderr.strip().splitlines()[-1].startswith(
            f"node-agent: {bad}: invalid YAML")
    else:
        assert r.returncode == 0, r.stderr      # nothing staged: nothing to remove
    assert os.listdir(root) == []


def mounts_under(root: str) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(root.rstrip("/") + "/")]


def test_two_once_runs_at_the_same_time_stage_one_tree(scratch):
    """Two --once started together: at most one stages; the other,
    if it overlapped, refuses with the lock line; one bind mount; teardown leaves the root."""
    import subprocess
    import sys

    from helpers import REPO
    root, _, _ = scratch
    before = listing(root)
    cmd = [sys.executable, "-m", "mokka", "node-agent", "--host-root", root, "--log-format",
           "plain", "--health-addr", "", "--once", "--profile", "t4"]
    runs = [subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]
    results = [(p.wait(60), p.stderr.read()) for p in runs]
    assert 0 in [code for code, _ in results], results
    for code, stderr in results:
        if code:
            assert code == 1 and stderr.strip().splitlines()[-1].startswith(
                "node-agent: another node-agent (pid "), stderr
    assert len(mounts_under(root)) <= 1
    assert run_agent(root, "--teardown").returncode == 0
    assert mounts_under(root) == []
    after = listing(root)
    assert after == before, diff(before, after)
