"""gpu-agent's self-check (the script in demo/node-wide-injection/workload.yaml), run
for real by /bin/sh against a staged overlay, with the environment the NRI plugin
injects (mokka-facts §0) and the topology document from the demo's values.yaml, which the
node's agent compiles into the node's state for its own node name.

Two lines of the script are pointed at the test's folders: the overlay mount
(/opt/nvml-mock in a container) and its "checks passed" marker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.native.staged import nvml_build  # noqa: F401  (fixture)
from tests.smi.conftest import stage_overlay

DEMO = Path(__file__).resolve().parents[2] / "demo" / "node-wide-injection"
NODE = "nvml-mock-node-wide-demo-worker"


def script(overlay: Path, ok: Path) -> str:
    doc = yaml.safe_load((DEMO / "workload.yaml").read_text())
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["/bin/sh", "-c"]
    text = container["args"][0]
    for line, new in (("overlay=/opt/nvml-mock\n", f"overlay={overlay}\n"),
                      ("ok=/tmp/gpu-agent-ok\n", f"ok={ok}\n")):
        assert text.count(line) == 1
        text = text.replace(line, new)
    return text


def manifest_env() -> dict[str, str]:
    doc = yaml.safe_load((DEMO / "workload.yaml").read_text())
    (container,) = doc["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def demo_topology() -> dict:
    return {"version": 1, "domains": yaml.safe_load((DEMO / "values.yaml").read_text())["topology"]["domains"]}


def stage_node(root: Path, profile: str, node: str, library: str):
    """A node's overlay as its agent stages it: the state compiled with the demo's topology
    for this node's name, and the document at the path the plugin injects."""
    overlay = stage_overlay(root, profile, library, demo_topology(), node)
    (overlay.root / "topology").mkdir()
    (overlay.root / "topology" / "topology.yaml").write_text(yaml.safe_dump(demo_topology()))
    return overlay


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, nvml_build):
    """Staged overlays by (profile, node name), made on first use."""
    staged = {}

    def get(profile: str, node: str = NODE):
        if (profile, node) not in staged:
            staged[profile, node] = stage_node(tmp_path_factory.mktemp(f"demo-{profile}"), profile, node,
                                               nvml_build)
        return staged[profile, node]
    return get


class Agent:
    def __init__(self, overlay, tmp: Path, node: str, plugin_node: str | None = None, **env):
        self.ok = tmp / "gpu-agent-ok"
        root = overlay.root
        self.env = overlay.env(str(tmp / "devroot"))
        self.env.update(manifest_env())
        self.env.update({
            # What the plugin injects (facts §0) ...
            "MOCK_NVML_CONFIG": f"{root}/driver/config/config.yaml",
            "NODE_NAME": plugin_node or node,
            "MOCK_TOPOLOGY_CONFIG": f"{root}/topology/topology.yaml",
            # ... and what the pod spec adds.
            "GPU_AGENT_NODE": node,
        })
        self.env.update(env)
        self.argv = ["/bin/sh", "-c", script(root, self.ok)]

    def run_to_failure(self) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv, env=self.env, capture_output=True, text=True, timeout=120)

    def run_until_ok(self) -> list[str]:
        """Start it, read until it reports OK, stop it as the kubelet would: exit 0."""
        proc = subprocess.Popen(self.argv, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        lines = []
        try:
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                if line.startswith("gpu-agent: OK"):
                    break
            else:
                pytest.fail(f"gpu-agent exited {proc.wait()} before OK:\n" + "\n".join(lines)
                            + proc.stderr.read())
            assert self.ok.exists()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            try:
                os.killpg(proc.pid, signal.SIGKILL)      # its backgrounded sleep
            except ProcessLookupError:
                pass
            proc.stdout.close()
            proc.stderr.close()
        return lines


@pytest.mark.parametrize("worker, clique", [("worker", 0), ("worker2", 0), ("worker3", 1),
                                             ("worker4", 1)])
def test_each_worker_reports_its_clique_and_the_domain(nodes, tmp_path, worker, clique):
    node = f"nvml-mock-node-wide-demo-{worker}"
    lines = Agent(nodes("gb200", node), tmp_path, node).run_until_ok()
    gpus = len(nodes("gb200", node).state["gpus"])
    assert lines[-1] == (f"gpu-agent: OK node=nvml-mock-node-wide-demo-{worker} gpus={gpus} "
                         f"clique={clique} cluster=00000000-0000-0000-0000-0000000000cd")
    assert f"  cliqueId: {clique}" in lines


def test_a_missing_overlay_crashes_loudly(nodes, tmp_path):
    agent = Agent(nodes("gb200"), tmp_path, NODE)
    agent.argv[2] = script(tmp_path / "not-injected", agent.ok)
    proc = agent.run_to_failure()
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"gpu-agent: FAIL on {NODE}: {tmp_path}/not-injected is missing: "
                                  "this container was not injected")
    assert not agent.ok.exists()


def test_a_node_in_the_wrong_clique_fails(nodes, tmp_path):
    # The node the agent compiled the topology for is worker3, clique 1; the pod is on worker.
    proc = Agent(nodes("gb200", f"{NODE}3"), tmp_path, NODE, plugin_node=f"{NODE}3").run_to_failure()
    assert proc.returncode == 1
    assert "gpu-agent: FAIL on nvml-mock-node-wide-demo-worker: check-fabric: 0 of" in proc.stderr
    assert "report cliqueId 0" in proc.stderr


def test_a_node_outside_the_topology_fails(nodes, tmp_path):
    proc = Agent(nodes("gb200", "other-cluster-worker9"), tmp_path, "other-cluster-worker9").run_to_failure()
    assert proc.returncode == 1
    assert "node other-cluster-worker9 has no entry in EXPECTED_CLIQUES" in proc.stderr


def test_a_node_the_document_does_not_place_keeps_the_default_uuid_and_fails(nodes, tmp_path):
    # kind-style name the workload expects, but the document names another cluster's nodes.
    proc = Agent(nodes("gb200", "gpu-lab-worker"), tmp_path, "gpu-lab-worker").run_to_failure()
    assert proc.returncode == 1
    assert "report clusterUuid 00000000-0000-0000-0000-0000000000cd" in proc.stderr


def test_a_profile_without_fabric_names_the_way_out(nodes, tmp_path):
    proc = Agent(nodes("t4"), tmp_path, NODE).run_to_failure()
    assert proc.returncode == 1
    assert "use a fabric profile (gb200) or WITH_COMPUTE_DOMAIN=false" in proc.stderr


def test_without_the_compute_domain_only_injection_is_checked(nodes, tmp_path):
    lines = Agent(nodes("t4"), tmp_path, NODE, CHECK_FABRIC="false").run_until_ok()
    gpus = len(nodes("t4").state["gpus"])
    assert "gpu-agent: fabric checks skipped (CHECK_FABRIC=false)" in lines
    assert lines[-1] == f"gpu-agent: OK node={NODE} gpus={gpus}"


def test_a_fabric_that_never_completes_fails(nodes, tmp_path, nvml_build):
    # A fabric-state folder without fabricmanager's marker reads IN_PROGRESS.
    overlay = stage_node(tmp_path / "overlay", "gb200", NODE, nvml_build)
    (overlay.root / "driver" / "fabric-state").mkdir()
    proc = Agent(overlay, tmp_path, NODE, FABRIC_WAIT_SECONDS="0").run_to_failure()
    assert proc.returncode == 1
    assert "fabric not COMPLETED after 0s: " in proc.stderr and "IN_PROGRESS" in proc.stderr
    # With the marker the same node passes.
    (overlay.root / "driver" / "fabric-state" / "fabricmanager.ready").write_text("")
    Agent(overlay, tmp_path, NODE, FABRIC_WAIT_SECONDS="0").run_until_ok()


def test_with_nvidia_s_own_nvidia_smi_as_the_image_stages_it(nvml_build, tmp_path):
    """The image stages NVIDIA's nvidia-smi 550 over the mock NVML library: the real agent
    stages gb200 with the demo's topology compiled in that way, and the
    self-check passes on NVIDIA's own -L and -q output."""
    from types import SimpleNamespace

    from tests.native.staged import clean_env
    from tests.peers import peer

    root = tmp_path / "host"
    topo = tmp_path / "topology.yaml"
    domains = yaml.safe_load((DEMO / "values.yaml").read_text())["topology"]["domains"]
    topo.write_text(yaml.safe_dump({"version": 1, "domains": domains}))
    agent = [sys.executable, "-m", "mokka", "node-agent", "--host-root", str(root),
             "--profile", "gb200", "--topology", str(topo), "--node-name", f"{NODE}3",
             "--container-runtime", "none",
             "--nvidia-smi", peer("NVIDIA_SMI"), "--health-addr", "", "--log-format", "plain"]
    done = subprocess.run(agent + ["--once"], capture_output=True, text=True, env=clean_env())
    try:
        assert done.returncode == 0, done.stderr
        overlay = root / "var" / "lib" / "nvml-mock"
        smi = overlay / "driver" / "usr" / "bin" / "nvidia-smi"
        assert smi.read_bytes()[:4] == b"\x7fELF"          # NVIDIA's binary, not our launcher
        node = SimpleNamespace(root=overlay, env=lambda dev_root: clean_env(
            PATH=f"{overlay}/driver/usr/bin{os.pathsep}{os.path.dirname(sys.executable)}"
                 f"{os.pathsep}/usr/bin:/bin",
            LD_LIBRARY_PATH=f"{overlay}/driver/usr/lib64", MOCK_NVML_DEV_ROOT=dev_root))
        os.makedirs(tmp_path / "devroot")
        lines = Agent(node, tmp_path, f"{NODE}3").run_until_ok()
        assert lines[-1] == (f"gpu-agent: OK node={NODE}3 gpus=8 clique=1 "
                             "cluster=00000000-0000-0000-0000-0000000000cd")
    finally:
        subprocess.run(agent + ["--teardown"], capture_output=True, env=clean_env())
