"""Safe by default and node pools, rendered by real helm: the DaemonSets run only on nodes
labelled nvml-mock.nvidia.com/enabled=true and tolerate only the taints the values name;
a pools list renders one DaemonSet and profile ConfigMap per pool; the schema and the
template refuse a bad pool with a line naming it; NOTES.txt names a namespace the plugin
injects."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.chart.conftest import CHART, KUBE_VERSION, Rendered, helm_template
from tests.chart.test_chart_render import host_path_of, print_config

OPT_IN = {"nvml-mock.nvidia.com/enabled": "true"}
TWO_POOLS = {"pools": [
    {"name": "h100", "nodeSelector": {"gpu-pool": "h100"}, "profile": "h100", "count": 4,
     "migLayout": "all-balanced"},
    {"name": "t4", "nodeSelector": {"gpu-pool": "t4"}, "profile": "t4",
     "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                      "effect": "NoSchedule"}]},
]}


def values_file(tmp_path, doc: dict) -> str:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def by_name(r: Rendered, kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in r.kind(kind)}


def agent_of(ds: dict) -> dict:
    return next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "node-agent")


def profile_of(configmap: dict) -> dict:
    return yaml.safe_load(configmap["data"]["config.yaml"])


def test_the_default_render_selects_opted_in_nodes_and_tolerates_no_taint(render):
    r = render()
    pod = r.pod
    assert pod["nodeSelector"] == {"nvml-mock.nvidia.com/enabled": "true"}
    assert "tolerations" not in pod
    assert r.daemonset["metadata"]["name"] == "nvml-mock"
    assert r.daemonset["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "nvml-mock", "app.kubernetes.io/instance": "nvml-mock"}
    assert [c["metadata"]["name"] for c in r.kind("ConfigMap")] == ["nvml-mock-config"]


def test_no_render_tolerates_every_taint(render, tmp_path):
    """A blanket toleration (operator Exists without a key) is never rendered unless given."""
    for r in (render(), render(values=values_file(tmp_path, TWO_POOLS)),
              render("nri.enabled=false", "nodeAgent.containerRuntime.enabled=false")):
        for ds in r.kind("DaemonSet"):
            for t in ds["spec"]["template"]["spec"].get("tolerations", []):
                assert "key" in t, (ds["metadata"]["name"], t)


def test_tolerations_and_node_selector_come_from_the_values(render, tmp_path):
    r = render(values=values_file(tmp_path, {
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                         "effect": "NoSchedule"}]}))
    assert r.pod["nodeSelector"] == {"nvml-mock.nvidia.com/enabled": "true",
                                     "kubernetes.io/os": "linux"}
    assert r.pod["tolerations"] == [{"key": "node-role.kubernetes.io/control-plane",
                                     "operator": "Exists", "effect": "NoSchedule"}]
    # The opt-in label can be dropped on purpose (every node then qualifies).
    r = render("nodeSelector.nvml-mock\\.nvidia\\.com/enabled=null")
    assert "nodeSelector" not in r.pod


def test_the_agent_sees_the_hosts_driver_evidence_read_only(render):
    r = render()
    agent = r.container("node-agent")
    assert host_path_of(r, agent, "/host/proc/driver/nvidia/version") == "/proc/driver/nvidia/version"
    assert host_path_of(r, agent, "/host/sys/module/nvidia") == "/sys/module/nvidia"
    mounts = {m["mountPath"]: m for m in agent["volumeMounts"]}
    assert mounts["/host/proc/driver"]["readOnly"] is True
    assert mounts["/host/sys/module"]["readOnly"] is True
    # A refusal is the container's last words: the pod's last state shows the line.
    assert agent["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert print_config(agent)["allow_real_driver"] is False
    allowed = render("nodeAgent.allowRealDriver=true").container("node-agent")
    assert "--allow-real-driver" in allowed["args"]
    assert print_config(allowed)["allow_real_driver"] is True


def test_two_pools_render_two_node_selected_daemonsets(render, tmp_path):
    r = render(values=values_file(tmp_path, TWO_POOLS))
    daemonsets = by_name(r, "DaemonSet")
    configmaps = by_name(r, "ConfigMap")
    assert sorted(daemonsets) == ["nvml-mock-h100", "nvml-mock-t4"]
    assert sorted(configmaps) == ["nvml-mock-h100-config", "nvml-mock-t4-config"]
    h100, t4 = daemonsets["nvml-mock-h100"], daemonsets["nvml-mock-t4"]
    assert h100["spec"]["template"]["spec"]["nodeSelector"] == {
        "gpu-pool": "h100", "nvml-mock.nvidia.com/enabled": "true"}
    assert t4["spec"]["template"]["spec"]["nodeSelector"] == {
        "gpu-pool": "t4", "nvml-mock.nvidia.com/enabled": "true"}
    assert "tolerations" not in h100["spec"]["template"]["spec"]
    assert t4["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    # Neither DaemonSet selects the other's pods.
    for ds, other in ((h100, t4), (t4, h100)):
        wanted = ds["spec"]["selector"]["matchLabels"]
        labels = other["spec"]["template"]["metadata"]["labels"]
        assert any(labels.get(k) != v for k, v in wanted.items())
    assert h100["spec"]["selector"]["matchLabels"]["nvml-mock.nvidia.com/pool"] == "h100"
    # Each pool's agent reads its own ConfigMap: the pool's profile, count and MIG layout.
    for ds, cm in ((h100, "nvml-mock-h100-config"), (t4, "nvml-mock-t4-config")):
        volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
        assert volumes["profile"]["configMap"]["name"] == cm
    assert profile_of(configmaps["nvml-mock-h100-config"])["device_defaults"]["name"] == \
        "NVIDIA H100 80GB HBM3"
    assert profile_of(configmaps["nvml-mock-h100-config"])["system"]["num_devices"] == 4
    assert profile_of(configmaps["nvml-mock-t4-config"])["device_defaults"]["name"] == "NVIDIA T4"
    with open(os.path.join(CHART, "profiles", "t4.yaml")) as f:
        assert configmaps["nvml-mock-t4-config"]["data"]["config.yaml"] == f.read()
    h100_agent = print_config(agent_of(h100))
    assert h100_agent["mig_layout"] == "all-balanced"
    assert print_config(agent_of(t4))["mig_layout"] == ""
    assert {"name": "MOKKA_AGENT_GPU_COUNT", "value": "4"} in agent_of(h100)["env"]
    assert not any(e["name"] == "MOKKA_AGENT_GPU_COUNT" for e in agent_of(t4)["env"])
    # Both pods carry the NRI sidecar.
    for ds in (h100, t4):
        names_ = [c["name"] for c in ds["spec"]["template"]["spec"]["containers"]]
        assert names_ == ["node-agent", "nri-plugin"]


def test_a_pool_takes_what_it_does_not_set_from_gpu(render, tmp_path):
    doc = {"gpu": {"profile": "a100", "count": 2, "mig": {"layout": "all-1g.10gb"}},
           "pools": [{"name": "left", "nodeSelector": {"rack": "left"}},
                     {"name": "right", "nodeSelector": {"rack": "right"}, "count": 1,
                      "migLayout": ""}]}
    r = render(values=values_file(tmp_path, doc))
    configmaps = by_name(r, "ConfigMap")
    daemonsets = by_name(r, "DaemonSet")
    left = profile_of(configmaps["nvml-mock-left-config"])
    right = profile_of(configmaps["nvml-mock-right-config"])
    assert left["device_defaults"]["name"] == right["device_defaults"]["name"] == \
        "NVIDIA A100-SXM4-40GB"
    assert (left["system"]["num_devices"], right["system"]["num_devices"]) == (2, 1)
    assert print_config(agent_of(daemonsets["nvml-mock-left"]))["mig_layout"] == "all-1g.10gb"
    assert print_config(agent_of(daemonsets["nvml-mock-right"]))["mig_layout"] == ""


def test_a_pools_custom_config_is_its_profile(render, tmp_path):
    with open(os.path.join(CHART, "profiles", "l40s.yaml")) as f:
        custom = f.read()
    r = render(values=values_file(tmp_path, {"pools": [
        {"name": "custom", "nodeSelector": {"gpu-pool": "custom"}, "customConfig": custom}]}))
    assert by_name(r, "ConfigMap")["nvml-mock-custom-config"]["data"]["config.yaml"] == custom


def test_pool_renders_lint_and_validate_strictly(helm, render, tmp_path):
    values = values_file(tmp_path, TWO_POOLS)
    done = subprocess.run([helm, "lint", "--strict", CHART, "-f", values],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout
    pytest.importorskip("kubernetes_validate")
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(render(values=values).text)
    done = subprocess.run([sys.executable, "-m", "kubernetes_validate", "--strict", "-k", "1.31",
                           "--quiet", str(rendered)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("sets, line", [
    (["pools[0].name=h100"], "- pools.0: nodeSelector is required"),
    (["pools[0].name=h100", "pools[0].nodeSelector.gpu-pool=a",
      "pools[1].name=h100", "pools[1].nodeSelector.gpu-pool=b"],
     'pools: two pools are named "h100": give each pool a name of its own '
     "(it suffixes its DaemonSet and ConfigMap)"),
    (["pools[0].name=v", "pools[0].nodeSelector.gpu-pool=v", "pools[0].profile=v100"],
     '- pools.0.profile: pools.0.profile must be one of the following: "a100", "h100", "b200", '
     '"gb200", "gb300", "l40s", "t4"'),
    (["pools[0].name=big", "pools[0].nodeSelector.gpu-pool=big", "pools[0].count=65"],
     "- pools.0.count: Must be less than or equal to 64"),
    (["pools[0].name=none", "pools[0].nodeSelector.gpu-pool=none", "pools[0].count=0"],
     "- pools.0.count: Must be greater than or equal to 1"),
    (["pools[0].nodeSelector.gpu-pool=a"], "- pools.0: name is required"),
    (["pools[0].name=H100_SXM", "pools[0].nodeSelector.gpu-pool=a"],
     "- pools.0.name: Does not match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"),
], ids=["no-selector", "duplicate-name", "unknown-profile", "count-65", "count-0", "no-name",
        "bad-name"])
def test_a_bad_pool_fails_the_render_with_its_line(helm, sets, line):
    done = helm_template(helm, *sets)
    assert done.returncode != 0 and done.stdout == ""
    assert line in done.stderr.splitlines() or f"Error: execution error at (nvml-mock/templates/" \
        f"pools.yaml:1:4): {line}" in done.stderr.splitlines(), done.stderr


def test_an_empty_pool_selector_is_refused(helm, tmp_path):
    values = values_file(tmp_path, {"pools": [{"name": "all", "nodeSelector": {}}]})
    done = helm_template(helm, values=values)
    assert done.returncode != 0
    assert "- pools.0.nodeSelector: Must have at least 1 properties" in done.stderr.splitlines()


# --- NOTES.txt ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def notes(helm, tmp_path_factory):
    """NOTES.txt as helm install prints it: helm template skips NOTES, so a copy of the
    chart renders the same text as a document's field."""
    copy = tmp_path_factory.mktemp("notes") / "chart"
    shutil.copytree(CHART, copy)
    with open(os.path.join(CHART, "templates", "NOTES.txt")) as f:
        text = f.read()
    (copy / "templates" / "notes-under-test.yaml").write_text(
        '{{- define "test.notes" -}}\n' + text + "{{- end -}}\n"
        'kind: Notes\ntext: {{ include "test.notes" . | toJson }}\n')

    def run(*sets: str, namespace: str = "mokka") -> str:
        argv = [helm, "template", "nvml-mock", str(copy), "--namespace", namespace,
                "--kube-version", KUBE_VERSION, "--show-only", "templates/notes-under-test.yaml"]
        for s in sets:
            argv += ["--set", s]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return yaml.safe_load(done.stdout)["text"]
    return run


def test_notes_run_the_check_in_default_when_the_release_has_its_own_namespace(notes):
    text = notes()
    assert ("  kubectl -n default run gpu-check --rm -it --restart=Never --image=ubuntu:24.04 \\\n"
            "    --annotations=nvml-mock.nvidia.com/devices=true -- nvidia-smi -L\n") in text
    assert "kubectl create namespace" not in text
    assert "  kubectl label node <node> nvml-mock.nvidia.com/enabled=true\n" in text


def test_notes_of_a_release_in_default_run_the_check_elsewhere(notes):
    text = notes(namespace="default")
    assert 'so not in "default" (the release was installed there: helm install without -n):' in text
    assert ("  kubectl create namespace gpu-check\n"
            "  kubectl -n gpu-check run gpu-check --rm -it --restart=Never --image=ubuntu:24.04 \\\n"
            ) in text
    assert "kubectl -n default run" not in text


def test_notes_of_an_excluded_default_run_the_check_elsewhere(notes):
    text = notes("nri.excludedNamespaces={default}")
    assert "  kubectl -n gpu-check run gpu-check" in text
    assert "(the release was installed there" not in text


def test_notes_name_each_pools_daemonset(notes):
    text = notes("pools[0].name=h100", "pools[0].nodeSelector.gpu-pool=h100", "pools[0].profile=h100",
                 "pools[0].count=4", "pools[1].name=t4", "pools[1].nodeSelector.gpu-pool=t4")
    assert ("  mokka/nvml-mock-h100: h100, 4 GPUs, nodes gpu-pool=h100,nvml-mock.nvidia.com/enabled=true "
            "(ConfigMap nvml-mock-h100-config)\n") in text
    assert ("  mokka/nvml-mock-t4: gb300, nodes gpu-pool=t4,nvml-mock.nvidia.com/enabled=true "
            "(ConfigMap nvml-mock-t4-config)\n") in text
    assert "  kubectl -n mokka logs ds/nvml-mock-t4 -c node-agent\n" in text
