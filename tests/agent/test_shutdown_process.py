"""How the real agent process ends: a terminal's Ctrl-C is a clean shutdown (no daemon
restarted on the way out), and a probe address someone else holds refuses the start
without keeping the host root's lock."""

from __future__ import annotations

import os
import signal
import socket

from helpers import AgentProcess, profile_bytes, run_agent
from tests.waiting import wait_until
from treelist import diff, listing


def test_ctrl_c_of_the_process_group_tears_down_without_restarting_a_daemon(scratch):
    root, outside, procs = scratch
    profile = os.path.join(outside, "profile.yaml")
    with open(profile, "wb") as f:
        f.write(profile_bytes("gb300", 2))       # NVLink fabric: a supervised fabricmanager process
    before = listing(root)
    agent = AgentProcess(root, "--profile", profile, "--resync-interval", "0", log_dir=outside,
                         new_session=True)
    procs.append(agent)
    agent.wait_staged()
    wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz (every daemon up)")
    wait_until(lambda: any("fabric ready" in line.get("msg", "") for line in agent.log_lines()),
               what="the fabricmanager child up")

    os.killpg(agent.proc.pid, signal.SIGINT)    # what Ctrl-C in a terminal does
    assert agent.proc.wait(60) == 0
    log = open(agent.log_path).read()
    assert "shutting down" in log and "SIGINT" in log
    assert "restarting" not in log, log
    after = listing(root)
    assert after == before, diff(before, after)


def test_a_probe_address_in_use_refuses_in_one_line_and_frees_the_root(scratch):
    root, outside, _ = scratch
    before = listing(root)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        addr = f"127.0.0.1:{taken.getsockname()[1]}"
        refused = run_agent(root, "--health-addr", addr)
    assert refused.returncode == 1
    lines = refused.stderr.splitlines()
    assert lines == [f"node-agent: cannot serve probes on '{addr}': Address already in use; "
                     "pass a free --health-addr HOST:PORT, or --health-addr '' to serve none"], lines
    after = listing(root)
    assert after == before, diff(before, after)        # no lock file left behind

    staged = run_agent(root, "--once", "--health-addr", "")
    assert staged.returncode == 0, staged.stderr       # the lock is free
    assert run_agent(root, "--teardown").returncode == 0
