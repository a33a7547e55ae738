"""The agent's daemons as real processes: fabricmanager's marker under the agent, Reload
that never restarts it, a killed daemon restarted while /readyz names it, and teardown."""

from __future__ import annotations

import os
import signal

from helpers import AgentProcess, profile_bytes
from tests.waiting import wait_until
from treelist import diff, listing

from mokka.core import names
from mokka.core.overlay import host_overlay
from tests.conftest import run_mokka


def marker_pid(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().split()[1])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def fabric_states(ov) -> set:
    """The fabric state every GPU reads through the mock library (check-fabric's lines)."""
    done = run_mokka("check-fabric", env={names.ENV_NVML_CONFIG: ov.profile, names.ENV_DEV_ROOT: "/nonexistent"})
    return {line.split()[1].lower() for line in done.stdout.splitlines() if line.startswith("  state ")}


def test_fabricmanager_marker_reload_kill_and_teardown(scratch):
    root, outside, procs = scratch
    profile = os.path.join(outside, "profile.yaml")
    with open(profile, "wb") as f:
        f.write(profile_bytes("gb300", 4))
    before = listing(root)
    agent = AgentProcess(root, "--profile", profile, "--resync-interval", "0", log_dir=outside)
    procs.append(agent)
    ov = host_overlay(root)
    agent.wait_staged()
    first = wait_until(lambda: marker_pid(ov.fabric_ready), what="the fabricmanager marker")
    assert fabric_states(ov) == {"completed"}
    assert any(line.get("logger") == "mokka.fabricmanager" and line.get("msg") == "fabric ready"
               for line in agent.log_lines()), "the child logs as the agent does (JSON, same stream)"
    assert os.readlink(ov.fabric_state_link) == names.DRIVER_FABRIC_STATE_DIR
    wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz 200")
    spec = open(os.path.join(root, names.CDI_SPEC_DIR.lstrip("/"), names.CDI_SPEC_GPU_FILE)).read()
    assert f"{names.ENV_FABRICMANAGER_STATE_DIR}={ov.fabric_state}" in spec, "CDI containers get it named"

    with open(profile, "wb") as f:                 # a new generation: Reload, never a restart
        f.write(profile_bytes("gb300", 2))
    wait_until(lambda: any(line.get("msg") == "converged" and line.get("generation") == 2
                           for line in agent.log_lines()), what="generation 2 converged (after its Reload)")
    assert marker_pid(ov.fabric_ready) == first

    os.kill(first, signal.SIGKILL)
    code, body = wait_until(lambda: (lambda r: r if r[0] == 503 else None)(agent.probe("/readyz")),
                            what="/readyz 503 while fabricmanager is down")
    assert body["simulator"] == "fabricmanager" and "killed by SIGKILL" in body["reason"]
    wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz 200 after the restart")
    second = wait_until(lambda: (lambda p: p if p not in (None, first) else None)(marker_pid(ov.fabric_ready)),
                        what="a marker from the restarted fabricmanager")
    assert second != first

    assert agent.terminate() == 0
    assert not os.path.lexists(ov.fabric_state) and not os.path.lexists(ov.fabric_state_link)
    assert diff(before, listing(root)) == ""
    assert not os.path.exists(f"/proc/{second}") or open(f"/proc/{second}/stat").read().split()[2] == "Z"


def test_a_fabric_that_never_comes_up(scratch):
    root, outside, procs = scratch
    agent = AgentProcess(root, "--profile", "gb300", "--fabricmanager-fail", log_dir=outside)
    procs.append(agent)
    ov = host_overlay(root)
    agent.wait_staged()
    code, body = wait_until(lambda: (lambda r: r if r[0] == 503 and r[1].get("simulator") == "fabricmanager"
                                     and "exited with status 1" in r[1]["reason"] else None)(agent.probe("/readyz")),
                            what="/readyz naming the failed fabricmanager")
    assert os.path.isdir(ov.fabric_state) and not os.path.exists(ov.fabric_ready)
    assert fabric_states(ov) == {"in_progress"}
    assert agent.terminate() == 0


def test_fabricmanager_disabled_leaves_auto_in_progress_and_the_node_ready(scratch):
    root, outside, procs = scratch
    before = listing(root)
    agent = AgentProcess(root, "--profile", "gb300", "--no-fabricmanager", log_dir=outside)
    procs.append(agent)
    ov = host_overlay(root)
    agent.wait_staged()
    code, body = wait_until(lambda: (lambda r: r if r[0] == 200 else None)(agent.probe("/readyz")),
                            what="/readyz 200 with the fabricmanager off")
    assert os.path.isdir(ov.fabric_state) and not os.path.exists(ov.fabric_ready)
    assert fabric_states(ov) == {"in_progress"}
    assert not any(line.get("logger") == "mokka.fabricmanager" for line in agent.log_lines())
    assert agent.terminate() == 0
    assert diff(before, listing(root)) == ""


def test_without_a_node_name_every_part_of_the_node_names_the_host(scratch):
    """mock-ib, the staged HCAs and the compiled state name the node as ``mokka ctl`` and
    kernellog do: the host name."""
    root, outside, procs = scratch
    host = os.uname().nodename
    agent = AgentProcess(root, "--profile", "h100", "--resync-interval", "0", log_dir=outside)
    procs.append(agent)
    ov = host_overlay(root)
    agent.wait_staged()
    serving = wait_until(lambda: [line for line in agent.log_lines() if line.get("msg") == "mock-ib serving"],
                         what="mock-ib serving")
    assert serving[0]["node"] == host
    with open(os.path.join(ov.ib, "sys/class/infiniband/mlx5_0/node_desc")) as f:
        assert f.read() == f"{host} mlx5_0\n"
    with open(os.path.join(ov.driver_config, "config.nvml")) as f:     # the compiled state the library reads
        assert f"node_name {host}" in f.read().splitlines()
    assert agent.terminate() == 0
