"""demo/node-wide-injection/run.sh against stand-in docker, kind, kubectl and helm.

The stand-ins (tests/demo/standin.py) record every call; these tests assert the
sequence a user's machine would see. PATH holds only the stand-ins and links to
the few system tools run.sh uses, so a real docker or kubectl on this machine
is never reached, and a missing stand-in is a missing tool.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "demo" / "node-wide-injection"
RUN = DEMO / "run.sh"
STANDIN = Path(__file__).with_name("standin.py")
TOOLS = ("docker", "kind", "kubectl", "helm")
#: Everything else run.sh calls: if it starts to need more, these tests say so.
SYSTEM_TOOLS = ("bash", "sed", "grep", "mktemp", "rm", "dirname")

CLUSTER = "nvml-mock-node-wide-demo"
CONTEXT = "kind-nvml-mock-node-wide-demo"
VERSION = "0.1.0"          # pyproject.toml's; test_default_tag_is_the_project_version pins it


class Demo:
    """A sandbox for one run.sh run: stand-in tools, their state, and the call log."""

    def __init__(self, tmp: Path, tools=TOOLS):
        self.bin = tmp / "bin"
        self.state = tmp / "state"
        self.log = tmp / "calls.jsonl"
        self.bin.mkdir()
        self.state.mkdir()
        code = STANDIN.read_text()
        for tool in tools:
            exe = self.bin / tool
            exe.write_text(f"#!{sys.executable}\n{code}")
            exe.chmod(0o755)
        for tool in SYSTEM_TOOLS:
            os.symlink(shutil.which(tool), self.bin / tool)

    def given(self, name: str, *lines: str) -> "Demo":
        (self.state / name).write_text("".join(line + "\n" for line in lines))
        return self

    def run(self, fail: str | None = None, **env: str) -> subprocess.CompletedProcess:
        full = {"PATH": str(self.bin), "HOME": str(self.state), "STANDIN_LOG": str(self.log),
                "STANDIN_STATE": str(self.state), "TMPDIR": str(self.state)}
        if fail:
            full["STANDIN_FAIL"] = fail
        full.update(env)
        return subprocess.run([str(RUN)], env=full, capture_output=True, text=True, timeout=120)

    def records(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def calls(self) -> list[list[str]]:
        return [[r["tool"], *r["argv"]] for r in self.records()]


@pytest.fixture
def demo(tmp_path) -> Demo:
    return Demo(tmp_path)


def kc(*args: str, context: str = CONTEXT) -> list[str]:
    return ["kubectl", "--context", context, *args]


def fresh_run_calls(cluster: str = CLUSTER, context: str = CONTEXT) -> list[list[str]]:
    """What a first run with no overrides calls, in order."""
    return [
        ["docker", "info"],
        ["kind", "get", "clusters"],
        ["kind", "create", "cluster", "--name", cluster, "--config", f"{DEMO}/kind-config.yaml",
         "--wait", "120s"],
        kc("cluster-info", context=context),
        kc("get", "nodes", "-o", "name", context=context),
        kc("wait", "--for=condition=Ready", "node", "--all", "--timeout=300s", context=context),
        kc("label", "node", f"{cluster}-worker", f"{cluster}-worker2", f"{cluster}-worker3",
           f"{cluster}-worker4", "nvml-mock.nvidia.com/enabled=true", "--overwrite", context=context),
        ["docker", "build", "-f", f"{REPO}/image/Dockerfile", "-t", "mokka:0.1.0", str(REPO)],
        ["kind", "load", "docker-image", "mokka:0.1.0", "--name", cluster],
        ["helm", "status", "nvml-mock", "--namespace", "mokka", "--kube-context", context],
        ["helm", "upgrade", "--install", "nvml-mock", f"{REPO}/chart", "--namespace", "mokka",
         "--create-namespace", "-f", f"{DEMO}/values.yaml", "--set-string", "image.tag=0.1.0",
         "--kube-context", context],
        kc("-n", "mokka", "rollout", "status", "daemonset/nvml-mock", "--timeout=300s",
           context=context),
        kc("get", "namespace", "default", context=context),
        kc("-n", "default", "create", "configmap", "gpu-agent-checks",
           "--from-literal=CHECK_FABRIC=true", "--dry-run=client", "-o", "yaml", context=context),
    ]


def test_fresh_run_creates_the_cluster_builds_installs_and_checks(demo):
    proc = demo.run()
    assert proc.returncode == 0, proc.stderr
    calls = demo.calls()
    assert calls[:14] == fresh_run_calls()
    applied = calls[14]
    assert applied[:7] == kc("-n", "default", "apply", "-f")
    assert applied[7].endswith("/gpu-agent-checks.yaml") and len(applied) == 8
    assert calls[15:] == [
        kc("-n", "default", "delete", "daemonset", "gpu-agent", "--ignore-not-found", "--wait=true"),
        kc("-n", "default", "apply", "-f", f"{DEMO}/workload.yaml"),
        kc("-n", "default", "rollout", "status", "daemonset/gpu-agent", "--timeout=300s"),
        kc("-n", "default", "get", "daemonset", "gpu-agent", "-o", "jsonpath={.status.numberReady}"),
        kc("-n", "default", "logs", "-l", "app.kubernetes.io/name=gpu-agent", "--tail=-1", "--prefix"),
    ]
    assert "gpu-agent: OK" in proc.stdout


def test_rerun_reuses_the_cluster_and_restarts_the_release_onto_the_reloaded_image(demo):
    assert demo.run().returncode == 0
    demo.log.unlink()
    proc = demo.run()
    assert proc.returncode == 0, proc.stderr
    calls = demo.calls()
    assert not [c for c in calls if c[:2] == ["kind", "create"] or c[:2] == ["kind", "delete"]]
    assert "reusing kind cluster nvml-mock-node-wide-demo" in proc.stdout
    # Still rebuilt and reloaded, and the agent pods restarted onto that image.
    assert ["kind", "load", "docker-image", "mokka:0.1.0", "--name", CLUSTER] in calls
    upgrade = next(i for i, c in enumerate(calls) if c[:3] == ["helm", "upgrade", "--install"])
    assert calls[upgrade + 1:upgrade + 3] == [
        kc("-n", "mokka", "rollout", "restart", "daemonset/nvml-mock"),
        kc("-n", "mokka", "rollout", "status", "daemonset/nvml-mock", "--timeout=300s"),
    ]
    # The workload's pods are recreated, so the plugin injects them afresh.
    delete = calls.index(kc("-n", "default", "delete", "daemonset", "gpu-agent",
                            "--ignore-not-found", "--wait=true"))
    assert calls[delete + 1] == kc("-n", "default", "apply", "-f", f"{DEMO}/workload.yaml")


def test_a_reused_cluster_gets_its_workers_labelled_before_the_install(demo):
    """The chart runs only on nodes labelled nvml-mock.nvidia.com/enabled=true: a cluster
    made before that label existed gets it too, on its workers only."""
    demo.given("clusters", "gpu-lab")
    assert demo.run(CLUSTER_NAME="gpu-lab").returncode == 0
    calls = demo.calls()
    label = kc("label", "node", "gpu-lab-worker", "gpu-lab-worker2", "gpu-lab-worker3",
               "gpu-lab-worker4", "nvml-mock.nvidia.com/enabled=true", "--overwrite",
               context="kind-gpu-lab")
    assert [c for c in calls if "label" in c] == [label]
    upgrade = next(i for i, c in enumerate(calls) if c[:3] == ["helm", "upgrade", "--install"])
    assert calls.index(label) < upgrade


def test_first_install_does_not_restart_what_it_just_created(demo):
    assert demo.run().returncode == 0
    assert not [c for c in demo.calls() if "restart" in c]


def test_force_recreate_deletes_then_creates_the_cluster(demo):
    demo.given("clusters", "other-cluster", CLUSTER)
    proc = demo.run(FORCE_RECREATE="true")
    assert proc.returncode == 0, proc.stderr
    kind = [c for c in demo.calls() if c[0] == "kind" and c[1] in ("create", "delete")]
    assert kind == [
        ["kind", "delete", "cluster", "--name", CLUSTER],
        ["kind", "create", "cluster", "--name", CLUSTER, "--config", f"{DEMO}/kind-config.yaml",
         "--wait", "120s"],
    ]
    assert (demo.state / "clusters").read_text().split() == ["other-cluster", CLUSTER]


def test_force_recreate_without_a_cluster_just_creates_it(demo):
    assert demo.run(FORCE_RECREATE="true").returncode == 0
    assert [c[1] for c in demo.calls() if c[0] == "kind" and c[1] in ("create", "delete")] == ["create"]


def test_overrides_reach_every_call(demo):
    proc = demo.run(CLUSTER_NAME="gpu-lab", NVML_MOCK_NAMESPACE="my-mokka",
                    WORKLOAD_NAMESPACE="my-demo", IMAGE_TAG="dev-1", GPU_PROFILE="t4",
                    GPU_COUNT="4", WITH_COMPUTE_DOMAIN="false",
                    KIND_NODE_IMAGE="kindest/node:v1.31.2", ROLLOUT_TIMEOUT="10m")
    assert proc.returncode == 0, proc.stderr
    calls = demo.calls()
    ctx = "kind-gpu-lab"
    assert ["kind", "create", "cluster", "--name", "gpu-lab", "--config", f"{DEMO}/kind-config.yaml",
            "--wait", "120s", "--image", "kindest/node:v1.31.2"] in calls
    assert ["docker", "build", "-f", f"{REPO}/image/Dockerfile", "-t", "mokka:dev-1", str(REPO)] in calls
    assert ["kind", "load", "docker-image", "mokka:dev-1", "--name", "gpu-lab"] in calls
    upgrade = next(r for r in demo.records() if r["argv"][:2] == ["upgrade", "--install"])
    argv = upgrade["argv"]
    extra = argv[argv.index("-f", 8) + 1]
    assert argv == ["upgrade", "--install", "nvml-mock", f"{REPO}/chart", "--namespace", "my-mokka",
                    "--create-namespace", "-f", f"{DEMO}/values.yaml", "-f", extra,
                    "--set-string", "image.tag=dev-1", "--set-string", "gpu.profile=t4",
                    "--set", "gpu.count=4", "--set", "topology.enabled=false", "--kube-context", ctx]
    # The later values file names this cluster's nodes in the same cliques.
    default_text = (DEMO / "values.yaml").read_text()
    assert upgrade["files"][extra] == default_text.replace(
        "nvml-mock-node-wide-demo-worker", "gpu-lab-worker")
    assert "gpu-lab-worker3" in upgrade["files"][extra]
    assert kc("-n", "my-mokka", "rollout", "status", "daemonset/nvml-mock", "--timeout=10m",
              context=ctx) in calls
    assert kc("create", "namespace", "my-demo", context=ctx) in calls
    assert kc("-n", "my-demo", "create", "configmap", "gpu-agent-checks",
              "--from-literal=CHECK_FABRIC=false", "--dry-run=client", "-o", "yaml",
              context=ctx) in calls
    assert kc("-n", "my-demo", "apply", "-f", f"{DEMO}/workload.yaml", context=ctx) in calls
    assert_every_call_is_pinned(demo, ctx)


def test_default_cluster_passes_values_yaml_alone(demo):
    assert demo.run().returncode == 0
    upgrade = next(r for r in demo.records() if r["argv"][:2] == ["upgrade", "--install"])
    assert list(upgrade["files"]) == [f"{DEMO}/values.yaml"]


def assert_every_call_is_pinned(demo: Demo, context: str) -> None:
    records = demo.records()
    kubectl = [r["argv"] for r in records if r["tool"] == "kubectl"]
    helm = [r["argv"] for r in records if r["tool"] == "helm"]
    assert kubectl and helm
    for argv in kubectl:
        assert argv[:2] == ["--context", context], argv
    for argv in helm:
        assert argv[-2:] == ["--kube-context", context], argv


@pytest.mark.parametrize("setup", ["fresh", "rerun", "force"])
def test_every_kubectl_and_helm_call_names_the_demo_context(demo, setup):
    if setup != "fresh":
        demo.given("clusters", CLUSTER).given("releases", "mokka/nvml-mock")
    proc = demo.run(FORCE_RECREATE="true" if setup == "force" else "false")
    assert proc.returncode == 0, proc.stderr
    assert_every_call_is_pinned(demo, CONTEXT)


@pytest.mark.parametrize("tool", TOOLS)
def test_a_missing_tool_is_one_line_and_nothing_runs(tmp_path, tool):
    demo = Demo(tmp_path, tools=[t for t in TOOLS if t != tool])
    proc = demo.run()
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"run.sh: missing required tool(s) on PATH: {tool};")
    assert demo.records() == []


def test_missing_tools_are_named_together(tmp_path):
    demo = Demo(tmp_path, tools=["docker", "kubectl"])
    proc = demo.run()
    assert proc.returncode == 1
    assert proc.stderr.startswith("run.sh: missing required tool(s) on PATH: kind helm;")


@pytest.mark.parametrize("env, says", [
    ({"FORCE_RECREATE": "yes"}, "FORCE_RECREATE must be true or false, got 'yes'"),
    ({"WITH_COMPUTE_DOMAIN": "1"}, "WITH_COMPUTE_DOMAIN must be true or false, got '1'"),
    ({"WORKLOAD_NAMESPACE": "mokka"}, "WORKLOAD_NAMESPACE 'mokka' is excluded from injection"),
    ({"WORKLOAD_NAMESPACE": "team", "NVML_MOCK_NAMESPACE": "team"},
     "WORKLOAD_NAMESPACE 'team' is excluded from injection"),
    ({"WORKLOAD_NAMESPACE": "kube-system"}, "WORKLOAD_NAMESPACE 'kube-system' is excluded"),
    ({"CLUSTER_NAME": "Demo_1"}, "CLUSTER_NAME 'Demo_1' is not a valid kind cluster name"),
    ({"NVML_MOCK_NAMESPACE": "a/b"}, "NVML_MOCK_NAMESPACE 'a/b' is not a valid namespace name"),
    ({"GPU_COUNT": "four"}, "GPU_COUNT must be a positive integer, got 'four'"),
    ({"IMAGE_TAG": "a b"}, "IMAGE_TAG 'a b' is not a valid image tag"),
    ({"ROLLOUT_TIMEOUT": "5"}, "ROLLOUT_TIMEOUT must be a duration such as 300s or 10m, got '5'"),
])
def test_bad_settings_are_refused_before_anything_runs(demo, env, says):
    proc = demo.run(**env)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("run.sh: " + says)
    assert demo.records() == []


def test_a_reused_cluster_of_another_shape_is_refused(demo):
    demo.given("clusters", CLUSTER).given(
        "nodes", f"node/{CLUSTER}-control-plane", f"node/{CLUSTER}-worker")
    proc = demo.run()
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"run.sh: cluster {CLUSTER} has no node {CLUSTER}-worker2: it was not made by this demo; "
        "set FORCE_RECREATE=true to rebuild it")
    assert not [c for c in demo.calls() if c[0] in ("docker", "helm") and c[1] != "info"]


def test_a_docker_without_daemon_is_one_line(demo):
    proc = demo.run(fail="^docker info")
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("run.sh: docker is installed but its daemon does not answer "
                                   "('docker info' failed); start it and re-run")
    assert demo.calls() == [["docker", "info"]]


def test_a_failing_workload_shows_its_log_and_fails(demo):
    proc = demo.run(fail="rollout status daemonset/gpu-agent")
    assert proc.returncode == 1
    calls = demo.calls()
    assert calls[-2:] == [
        kc("-n", "default", "rollout", "status", "daemonset/gpu-agent", "--timeout=300s"),
        kc("-n", "default", "logs", "-l", "app.kubernetes.io/name=gpu-agent", "--prefix",
           "--tail=20"),
    ]
    assert proc.stderr.strip().splitlines()[-1] == (
        "run.sh: gpu-agent did not pass its checks on every worker within 300s; its logs are above")


def test_a_chart_that_never_gets_ready_stops_before_the_workload(demo):
    proc = demo.run(fail="rollout status daemonset/nvml-mock")
    assert proc.returncode == 1
    calls = demo.calls()
    assert calls[-1] == kc("-n", "mokka", "get", "pods", "-l", "app.kubernetes.io/name=nvml-mock",
                           "-o", "wide")
    assert "daemonset/nvml-mock in namespace mokka did not become ready within 300s" in proc.stderr


def test_a_failing_build_stops_the_run(demo):
    proc = demo.run(fail="^docker build")
    assert proc.returncode != 0
    assert demo.calls()[-1][:2] == ["docker", "build"]


def test_default_tag_is_the_project_version():
    import tomllib
    with open(REPO / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["version"] == VERSION


def test_the_scratch_folder_is_removed(demo):
    assert demo.run(CLUSTER_NAME="gpu-lab").returncode == 0
    # TMPDIR is the state folder: only the stand-ins' own files stay there.
    assert sorted(p.name for p in demo.state.iterdir()) == ["clusters", "releases"]


def test_readme_documents_every_setting_run_sh_reads():
    import re
    readme = (DEMO / "README.md").read_text()
    script = RUN.read_text()
    read = set(re.findall(r'^([A-Z_]+)="\$\{\1:-', script, re.M))
    documented = set(re.findall(r"^\| `([A-Z_]+)`(?:, `([A-Z_]+)`)? \|", readme, re.M))
    documented = {name for pair in documented for name in pair if name}
    assert read == documented == {
        "CLUSTER_NAME", "FORCE_RECREATE", "KIND_NODE_IMAGE", "IMAGE_TAG", "NVML_MOCK_NAMESPACE",
        "WORKLOAD_NAMESPACE", "GPU_PROFILE", "GPU_COUNT", "WITH_COMPUTE_DOMAIN", "ROLLOUT_TIMEOUT"}
