"""The demo's kind config, chart values and workload: they parse, they say what the
facts say (mokka-facts §3's demo layout, the devices opt-in, NRI on at the
plugin's socket), and they agree with each other and with mokka/core/names.py.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from mokka.core import names, topology
from tests.peers import peer

DEMO = Path(__file__).resolve().parents[2] / "demo" / "node-wide-injection"
NRI = "io.containerd.nri.v1.nri"
CLUSTER = "nvml-mock-node-wide-demo"


def load(name: str):
    with open(DEMO / name) as f:
        return yaml.safe_load(f)


def nri_patch() -> str:
    patches = load("kind-config.yaml")["containerdConfigPatches"]
    assert len(patches) == 1
    return patches[0]


def workload_container() -> dict:
    (container,) = load("workload.yaml")["spec"]["template"]["spec"]["containers"]
    return container


def workload_env() -> dict:
    return {e["name"]: e for e in workload_container()["env"]}


# --- kind config -----------------------------------------------------------------


def test_kind_config_is_one_control_plane_and_four_workers():
    cfg = load("kind-config.yaml")
    assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert [n["role"] for n in cfg["nodes"]] == ["control-plane"] + ["worker"] * 4


def test_kind_config_turns_nri_on_at_the_plugins_socket():
    table = tomllib.loads(nri_patch())["plugins"][NRI]
    assert table["disable"] is False
    assert table["socket_path"] == "/var/run/nri/nri.sock"
    assert table["socket_path"] == names.NRI_SOCKET_PATH


def test_containerd_reads_the_nri_patch_as_written():
    """containerd 1.7 itself (the fetched runtime) merges the patch into a version 2
    config: every key we set must come back with our value (a misspelt key would be
    dropped, and NRI would stay at its default, disabled)."""
    containerd = peer("CONTAINERD")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.toml"
        cfg.write_text("version = 2\n" + nri_patch() + "\n")
        out = subprocess.run([containerd, "--config", str(cfg), "config", "dump"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    dumped = tomllib.loads(out)["plugins"][NRI]
    ours = tomllib.loads(nri_patch())["plugins"][NRI]
    assert {k: dumped.get(k) for k in ours} == ours
    assert dumped["disable"] is False


# --- chart values ----------------------------------------------------------------


def test_values_use_only_the_agreed_value_names():
    values = load("values.yaml")
    assert set(values) == {"image", "gpu", "nri", "topology"}
    assert values["image"] == {"repository": "mokka", "pullPolicy": "IfNotPresent"}
    assert values["gpu"] == {"profile": "gb200"}
    assert values["nri"] == {"enabled": True}
    assert set(values["topology"]) == {"enabled", "domains"}


def test_values_topology_is_the_demo_layout_of_the_facts():
    """mokka-facts §3: domain node-wide-domain, uuid …cd, workers 1-2 clique 0, 3-4 clique 1,
    named as kind names the nodes of run.sh's default cluster."""
    topo = load("values.yaml")["topology"]
    assert topo["enabled"] is True
    assert topo["domains"] == [{
        "name": "node-wide-domain",
        "uuid": "00000000-0000-0000-0000-0000000000cd",
        "cliques": [
            {"id": 0, "nodes": [f"{CLUSTER}-worker", f"{CLUSTER}-worker2"]},
            {"id": 1, "nodes": [f"{CLUSTER}-worker3", f"{CLUSTER}-worker4"]},
        ],
    }]
    topology.validate({"version": 1, "domains": topo["domains"]})
    assert f'default_cluster="{CLUSTER}"' in (DEMO / "run.sh").read_text()


# --- workload --------------------------------------------------------------------


def test_workload_opts_in_with_the_devices_annotation_only():
    ds = load("workload.yaml")
    assert ds["kind"] == "DaemonSet" and ds["metadata"]["name"] == "gpu-agent"
    assert "namespace" not in ds["metadata"]          # run.sh applies it with -n
    annotations = ds["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"nvml-mock.nvidia.com/devices": "true"}
    assert list(annotations) == [names.ANNOTATION_DEVICES]


def test_workload_is_an_ordinary_pod():
    """No GPU request, no hostPath or other volume, no PATH, LD_PRELOAD or MOCK_* of its
    own, and not NODE_NAME (the plugin's to inject), nor any toleration (workers only)."""
    pod = load("workload.yaml")["spec"]["template"]["spec"]
    container = workload_container()
    assert "volumes" not in pod and "volumeMounts" not in container
    assert "tolerations" not in pod
    assert not any("nvidia.com" in k for part in container["resources"].values() for k in part)
    for name in workload_env():
        assert name not in ("PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "NODE_NAME")
        assert not name.startswith("MOCK_")
    assert pod["automountServiceAccountToken"] is False


def test_workload_expects_what_the_values_promise():
    env = workload_env()
    (domain,) = load("values.yaml")["topology"]["domains"]
    assert env["EXPECTED_CLUSTER_UUID"]["value"] == domain["uuid"]
    expected = dict(pair.split("=") for pair in env["EXPECTED_CLIQUES"]["value"].split())
    promised = {node.removeprefix(f"{CLUSTER}-"): str(c["id"])
                for c in domain["cliques"] for node in c["nodes"]}
    assert expected == promised == {"worker": "0", "worker2": "0", "worker3": "1", "worker4": "1"}
    assert env["CHECK_FABRIC"]["valueFrom"]["configMapKeyRef"] == {
        "name": "gpu-agent-checks", "key": "CHECK_FABRIC", "optional": True}
    assert env["GPU_AGENT_NODE"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}


def kubernetes_validate(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("kubernetes-validate")
    if exe is None:
        pytest.fail("kubernetes-validate is not installed: pip install -e '.[test]'")
    return subprocess.run([exe, "--strict", "--kubernetes-version", "1.28.0", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_workload_passes_kubernetes_validate(tmp_path):
    proc = kubernetes_validate(DEMO / "workload.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed for resource daemonset/gpu-agent" in proc.stdout
    # The control: strict validation does catch a misspelt field in this file.
    typo = tmp_path / "workload.yaml"
    typo.write_text((DEMO / "workload.yaml").read_text().replace("imagePullPolicy:", "imagePullPolicyy:"))
    assert kubernetes_validate(typo).returncode != 0


def test_the_chart_renders_with_the_demo_values(tmp_path):
    """helm upgrade --install as run.sh calls it, rendered offline: the values pass the
    chart's schema, the manifests pass strict validation, and the topology ConfigMap
    holds the demo's cliques for the kind workers."""
    helm = peer("HELM")
    done = subprocess.run([helm, "template", "nvml-mock", str(DEMO.parents[1] / "chart"), "--namespace",
                           "mokka", "--kube-version", "1.28.0", "-f", str(DEMO / "values.yaml"),
                           "--set-string", "image.tag=0.1.0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(done.stdout)
    proc = kubernetes_validate(rendered)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "nvml-mock-topology"]
    doc = yaml.safe_load(cm["data"]["topology.yaml"])
    assert doc["version"] == 1
    assert [(c["id"], c["nodes"]) for c in doc["domains"][0]["cliques"]] == [
        (0, [f"{CLUSTER}-worker", f"{CLUSTER}-worker2"]), (1, [f"{CLUSTER}-worker3", f"{CLUSTER}-worker4"])]
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert ds["metadata"]["name"] == "nvml-mock"
    names_ = [c["name"] for c in ds["spec"]["template"]["spec"]["containers"]]
    assert names_ == ["node-agent", "nri-plugin"]
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "mokka:0.1.0"
    # Only the workers run.sh labels: the control plane (tainted, unlabelled) is left alone.
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {"nvml-mock.nvidia.com/enabled": "true"}
    assert "tolerations" not in ds["spec"]["template"]["spec"]
    assert 'opt_in_label="nvml-mock.nvidia.com/enabled"' in (DEMO / "run.sh").read_text()
