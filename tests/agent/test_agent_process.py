"""The real agent process on a scratch root: stage, converge on a ConfigMap swap,
survive a broken profile, and leave the root byte-identical on SIGTERM."""

from __future__ import annotations

import json
import os
import stat

from helpers import AgentProcess, configmap_dir, profile_bytes
from tests.waiting import wait_until
from treelist import diff, listing

from mokka.agent import desired as ds
from mokka.core import names
from mokka.core.overlay import host_overlay

TOPOLOGY = b"""version: 1
domains:
- name: d
  uuid: 00000000-0000-0000-0000-0000000000cd
  cliques:
  - id: 7
    nodes: [node-1]
"""


def expected(path: str, data: bytes, topology: bytes | None = None, node: str = "") -> ds.Desired:
    """What the agent stages; with no --node-name it names the node as the host is named
    (and the GPUs keep the profile's identities)."""
    return ds.build(0, path, path, data, topology, "", node or os.uname().nodename, identity_node=node)


def gpu_nodes(root: str) -> list[str]:
    dev = host_overlay(root).dev
    return sorted(n for n in os.listdir(dev) if n.startswith("nvidia") and n[6:].isdigit())


def test_stage_swap_reject_and_sigterm_restores_the_root(scratch):
    root, outside, procs = scratch
    cm = os.path.join(outside, "cm")
    a, b = profile_bytes("h100", 4), profile_bytes("a100", 2)
    configmap_dir(cm, {"profile.yaml": a, "topology.yaml": TOPOLOGY}, "v1")
    profile_path, topo_path = os.path.join(cm, "profile.yaml"), os.path.join(cm, "topology.yaml")
    before = listing(root)

    agent = AgentProcess(root, "--profile", profile_path, "--topology", topo_path,
                         "--node-name", "node-1", "--imex-channels", "3", "--resync-interval", "0",
                         log_dir=outside)
    procs.append(agent)
    want_a = expected(profile_path, a, TOPOLOGY, "node-1")
    body = agent.wait_staged(want_a.digest)
    assert body["generation"] == 1
    ov = host_overlay(root)
    assert gpu_nodes(root) == [f"nvidia{i}" for i in range(4)]
    st = os.lstat(ov.gpu_node(3))
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == names.NVIDIA_MAJOR
    assert stat.S_IMODE(st.st_mode) == names.DEVICE_FILE_MODE
    companion = open(ov.profile[:-5] + ".nvml").read().splitlines()
    assert "gpu_count 4" in companion and "topology.clique_id 7" in companion
    # The digest the mock NVML library checks the companion against.
    assert companion[1] == "digest sha256:" + __import__("hashlib").sha256(
        open(ov.profile, "rb").read()).hexdigest()
    assert open(ov.topology, "rb").read() == TOPOLOGY
    assert len(os.listdir(ov.imex_channels)) == 3
    assert wait_until(lambda: agent.probe("/readyz")[0] == 200, what="/readyz")
    assert agent.probe("/healthz")[0] == 200

    # A ConfigMap update: the kubelet swaps ..data; the topology goes away with it.
    configmap_dir(cm, {"profile.yaml": b}, "v2")
    os.unlink(topo_path)
    want_b = expected(profile_path, b, node="node-1")
    agent.wait_staged(want_b.digest)
    assert gpu_nodes(root) == ["nvidia0", "nvidia1"]
    assert "gpu_count 2" in open(ov.profile[:-5] + ".nvml").read().splitlines()
    assert not os.path.exists(ov.topology)
    assert len(os.listdir(ov.imex_channels)) == 3      # --imex-channels asks even without fabric

    # A broken profile: the node keeps B; /healthz stays 200 and names the file and reason.
    configmap_dir(cm, {"profile.yaml": b"system: [unclosed\n"}, "v3")
    code, health = wait_until(lambda: (lambda r: r if "rejected" in r[1] else None)(
        agent.probe("/healthz")), what="/healthz naming the rejected profile")
    assert code == 200
    assert health["rejected"]["file"] == profile_path and "invalid YAML" in health["rejected"]["reason"]
    assert agent.probe("/stagedz")[1]["digest"] == want_b.digest
    assert gpu_nodes(root) == ["nvidia0", "nvidia1"]
    assert any(line.get("level") == "error" and line.get("file") == profile_path
               for line in agent.log_lines())

    assert agent.terminate() == 0
    after = listing(root)
    assert after == before, diff(before, after)


def test_editor_replace_in_place_is_seen(scratch):
    root, outside, procs = scratch
    path = os.path.join(outside, "profile.yaml")
    with open(path, "wb") as f:
        f.write(profile_bytes("a100", 3))
    agent = AgentProcess(root, "--profile", path, "--resync-interval", "0", log_dir=outside)
    procs.append(agent)
    agent.wait_staged(expected(path, profile_bytes("a100", 3)).digest)
    tmp = path + ".swp"                  # an editor's save: write a new inode, rename over
    with open(tmp, "wb") as f:
        f.write(profile_bytes("a100", 5))
    os.replace(tmp, path)
    agent.wait_staged(expected(path, profile_bytes("a100", 5)).digest)
    assert len(gpu_nodes(root)) == 5
    assert agent.terminate() == 0
