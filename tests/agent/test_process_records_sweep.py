"""The agent sweeps the CUDA process records of processes that are gone, whoever wrote them:
a record of another user left by a SIGKILL goes at the agent's start, a live one stays, and
what is not a user's directory beside them goes too."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import AgentProcess, run_agent
from tests.native.staged import nvml_build  # noqa: F401  (fixture: the agent stages the library)
from tests.waiting import wait_until

from mokka.core.overlay import host_overlay

FORGER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native", "records_forger.py")
NOBODY = "65534"


def forger(directory: str, count: int) -> tuple[subprocess.Popen, list[int]]:
    """``count`` records of GPU 0 held by one process of uid 65534; end it with ``.stdin.close()``."""
    proc = subprocess.Popen([sys.executable, FORGER, "hold", directory, "0", str(count), "1", "1048576",
                             b"trainer".hex(), "--uid", NOBODY],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, json.loads(proc.stdout.readline())["pids"]


def test_records_of_another_users_killed_process_are_swept_and_a_live_ones_kept(scratch, nvml_build):
    root, outside, procs = scratch
    done = run_agent(root, "--once", "--health-addr", "", "--profile", "t4")
    assert done.returncode == 0, done.stderr
    records = host_overlay(root).process_records
    dead, _ = forger(records, 3)
    dead.stdin.close()                                   # SIGKILLed: its three records stay behind
    assert dead.wait(30) == 0
    mine = os.path.join(records, NOBODY)                 # the forger's user's directory
    gone = sorted(os.listdir(mine))
    assert len(gone) == 3
    live, _ = forger(records, 1)
    with open(os.path.join(records, "junk"), "w") as f:  # a stray beside the users' directories
        f.write("x")
    try:
        kept = sorted(set(os.listdir(mine)) - set(gone))
        agent = AgentProcess(root, "--profile", "t4", log_dir=outside)
        procs.append(agent)
        agent.wait_staged()
        swept = wait_until(lambda: [line.get("removed") for line in agent.log_lines()
                                    if line.get("msg") == "removed the records of CUDA processes that are gone"],
                           what="the dead records swept")
        assert swept == [3 + 1]
        assert sorted(os.listdir(mine)) == kept
        assert os.listdir(records) == [NOBODY]
        assert agent.terminate() == 0
    finally:
        live.stdin.close()
        live.wait(30)
