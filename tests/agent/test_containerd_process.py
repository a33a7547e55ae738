"""The real agent process setting up a scratch host's containerd, with a fake
``systemctl`` on PATH that records every restart (and fails on request)."""

from __future__ import annotations

import os
import tomllib

from helpers import AgentProcess, profile_bytes, run_agent
from tests.waiting import wait_until
from treelist import diff, listing

from mokka.core import names

HOST_CONFIG = "# the host's comment\nversion = 2\n"
RESTART = " ".join(names.CONTAINERD_RESTART_COMMAND[1:])
QUEUE = " ".join(names.CONTAINERD_QUEUE_RESTART_COMMAND[1:])


def fake_host(root: str, outside: str, fail: bool = False) -> tuple[dict, str]:
    """containerd on the host's PATH and its config.toml; a systemctl on the agent's PATH."""
    for path, text, mode in (
            ("usr/bin/containerd", "#!/bin/sh\n", 0o755),
            ("etc/containerd/config.toml", HOST_CONFIG, 0o644)):
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        os.chmod(full, mode)
    bin_dir, record = os.path.join(outside, "bin"), os.path.join(outside, "systemctl.calls")
    os.makedirs(bin_dir, exist_ok=True)
    systemctl = os.path.join(bin_dir, "systemctl")
    with open(systemctl, "w") as f:
        f.write(f'#!/bin/sh\necho "$@" >> "{record}"\n'
                + ('echo "Job for containerd.service failed." >&2\nexit 1\n' if fail else "exit 0\n"))
    os.chmod(systemctl, 0o755)
    return {"PATH": bin_dir + os.pathsep + os.environ["PATH"]}, record


def calls(record: str) -> list[str]:
    try:
        with open(record) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def write_profile(outside: str, count: int) -> str:
    path = os.path.join(outside, "profile.yaml")
    tmp = path + ".new"
    with open(tmp, "wb") as f:
        f.write(profile_bytes("a100", count))
    os.replace(tmp, path)
    return path


def test_serve_restarts_once_at_start_not_on_an_unchanged_pass_and_queues_one_on_sigterm(scratch):
    root, outside, procs = scratch
    env, record = fake_host(root, outside)
    before = listing(root)
    profile = write_profile(outside, 2)
    agent = AgentProcess(root, "--profile", profile, "--resync-interval", "0", log_dir=outside,
                         env=env)
    procs.append(agent)
    wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz")
    assert calls(record) == [RESTART]
    drop_in = os.path.join(root, "etc/containerd/conf.d", names.CONTAINERD_DROP_IN_FILE)
    with open(drop_in, "rb") as f:
        assert tomllib.load(f)["plugins"][names.CONTAINERD_NRI_PLUGIN]["disable"] is False

    generation = agent.probe("/stagedz")[1]["generation"]
    write_profile(outside, 3)                       # a new pass; containerd's files unchanged
    wait_until(lambda: agent.probe("/stagedz")[1].get("generation", 0) > generation
               and agent.probe("/readyz")[0] == 200, what="the second pass")
    assert calls(record) == [RESTART]

    assert agent.terminate() == 0
    assert calls(record) == [RESTART, QUEUE]
    after = listing(root)
    assert after == before, diff(before, after)


def test_restart_mode_none_restarts_nothing_and_logs_the_pending_restart(scratch):
    root, outside, _ = scratch
    env, record = fake_host(root, outside)
    done = run_agent(root, "--once", "--profile", "t4", "--health-addr", "",
                     "--restart-mode", "none", env=env)
    assert done.returncode == 0, done.stderr
    assert calls(record) == []
    assert "a containerd restart is pending (--restart-mode=none)" in done.stderr + done.stdout


def test_a_failing_systemctl_makes_the_agent_not_ready_and_names_it_in_the_log(scratch):
    root, outside, procs = scratch
    env, record = fake_host(root, outside, fail=True)
    agent = AgentProcess(root, "--profile", write_profile(outside, 2), "--resync-interval", "0",
                         log_dir=outside, env=env)
    procs.append(agent)
    wait_until(lambda: calls(record), what="a restart attempt")
    code, body = wait_until(lambda: (lambda r: r if "container runtime" in r[1].get("reason", "")
                                     else None)(agent.probe("/readyz")), what="/readyz naming cri")
    assert code == 503 and body["simulator"] == "cri"
    assert f"`{' '.join(names.CONTAINERD_RESTART_COMMAND)}` exited 1" in body["reason"]
    wait_until(lambda: any(line.get("level") == "error" and "systemctl restart containerd"
                           in line.get("error", "") for line in agent.log_lines()),
               what="an error line naming systemctl")


def test_leave_alone_without_containerd_stays_ready_logs_why_as_info_and_writes_no_config(scratch):
    root, outside, procs = scratch
    env, record = fake_host(root, outside)
    os.unlink(os.path.join(root, "usr/bin/containerd"))
    agent = AgentProcess(root, "--profile", write_profile(outside, 2), "--resync-interval", "0",
                         log_dir=outside, env=env)
    procs.append(agent)
    wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz")
    assert not os.path.exists(os.path.join(root, "etc/containerd/conf.d"))
    with open(os.path.join(root, "etc/containerd/config.toml")) as f:
        assert f.read() == HOST_CONFIG
    assert calls(record) == []
    said = [line["level"] for line in agent.log_lines()
            if "container runtime left alone" in line.get("msg", "")]
    assert said == ["info"]                  # no containerd is a bare host, not a failure


def test_once_then_a_fresh_teardown_process_reverts_from_the_manifest_alone(scratch):
    root, outside, _ = scratch
    env, record = fake_host(root, outside)
    before = listing(root)
    done = run_agent(root, "--once", "--profile", "t4", "--health-addr", "", env=env)
    assert done.returncode == 0, done.stderr
    assert calls(record) == [RESTART]
    done = run_agent(root, "--teardown", env=env)
    assert done.returncode == 0, done.stderr
    assert calls(record) == [RESTART, QUEUE]
    after = listing(root)
    assert after == before, diff(before, after)
