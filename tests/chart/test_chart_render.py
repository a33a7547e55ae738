"""The chart rendered by real helm: lint, every built-in profile x {raw, cdi} x {nri on, off}
x {topology on, off} valid for Kubernetes 1.31 (kubernetes-validate --strict) and
structurally right, every rendered command line accepted by the real CLI's --print-config,
the refusals, the profile ConfigMap, helm package."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml

from mokka.core import names
from tests.chart.conftest import CHART, ROOT, helm_template

PROFILES = names.BUILTIN_PROFILES
TOPOLOGY = ["topology.enabled=true", "topology.domains[0].name=node-wide-domain",
            "topology.domains[0].uuid=00000000-0000-0000-0000-0000000000cd",
            "topology.domains[0].cliques[0].id=0",
            "topology.domains[0].cliques[0].nodes={kind-worker,kind-worker2}",
            "topology.domains[0].cliques[1].id=1",
            "topology.domains[0].cliques[1].nodes={kind-worker3,kind-worker4}"]
MATRIX = list(itertools.product(PROFILES, ("raw", "cdi"), (True, False), (True, False)))
NODE = "kind-worker"


def matrix_sets(profile, mode, nri, topology) -> list[str]:
    return [f"gpu.profile={profile}", f"nri.deviceInjectionMode={mode}",
            f"nri.enabled={str(nri).lower()}", *(TOPOLOGY if topology else [])]


@pytest.fixture(scope="module")
def matrix(render, tmp_path_factory):
    out = tmp_path_factory.mktemp("rendered")
    rendered = {}
    for case in MATRIX:
        r = render(*matrix_sets(*case))
        path = out / ("-".join(str(x) for x in case) + ".yaml")
        path.write_text(r.text)
        rendered[case] = (r, str(path))
    return rendered


def kubelet_expand(value: str, env: dict[str, str]) -> str:
    """$(VAR) as the kubelet expands it in args."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), value)


def container_env(container: dict) -> dict[str, str]:
    env = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        elif item.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            env[item["name"]] = NODE
        else:
            raise AssertionError(f"unexpected env source {item}")
    return env


def print_config(container: dict) -> dict:
    """The container's command line, as the pod would run it, through --print-config."""
    env = container_env(container)
    args = [kubelet_expand(a, env) for a in container.get("args", [])]
    command = container.get("command") or ["/usr/local/bin/mokka"]       # the image's entrypoint
    argv0 = os.path.basename(command[0])
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NODE_NAME", "MOCK_"))}
    clean.update(env, PYTHONPATH=ROOT)
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from mokka.cmd.main import main; "
         f"sys.argv[0] = {argv0!r}; raise SystemExit(main())", *command[1:], *args, "--print-config"],
        env=clean, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


def host_path_of(r, container: dict, path: str) -> str | None:
    """The host path behind a path inside the container (None: not on a hostPath volume)."""
    volumes = {v["name"]: v for v in r.pod["volumes"]}
    best = None
    for m in container["volumeMounts"]:
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best[0]):
                best = (mp, volumes[m["volumeName"] if "volumeName" in m else m["name"]])
    if best is None or "hostPath" not in best[1]:
        return None
    return best[1]["hostPath"]["path"].rstrip("/") + path[len(best[0]):]


def test_lint_strict_is_clean(helm):
    done = subprocess.run([helm, "lint", "--strict", CHART], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout


def test_every_matrix_render_passes_kubernetes_validate_strict(matrix):
    pytest.importorskip("kubernetes_validate")
    files = [path for _, path in matrix.values()]
    done = subprocess.run([sys.executable, "-m", "kubernetes_validate", "--strict", "-k", "1.31",
                           "--quiet", *files], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_validator_would_catch_an_unknown_field(matrix, tmp_path):
    """kubernetes-validate --strict really rejects what the renders must not contain."""
    pytest.importorskip("kubernetes_validate")
    r, _ = matrix[("gb300", "raw", True, True)]
    ds = r.daemonset
    ds["spec"]["template"]["spec"]["containers"][0]["hostRoot"] = "/host"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(ds))
    done = subprocess.run([sys.executable, "-m", "kubernetes_validate", "--strict", "-k", "1.31",
                           "--quiet", str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0


@pytest.mark.parametrize("case", MATRIX, ids=["-".join(map(str, c)) for c in MATRIX])
def test_matrix_structure(matrix, case):
    profile, mode, nri, topology = case
    r, _ = matrix[case]
    assert sorted(d["kind"] for d in r.docs) == ["ConfigMap"] * (2 if topology else 1) + ["DaemonSet"]
    ds = r.daemonset
    assert ds["metadata"]["name"] == "nvml-mock"
    assert ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "nvml-mock"
    pod = r.pod
    assert pod["automountServiceAccountToken"] is False
    assert [c["name"] for c in pod["containers"]] == ["node-agent"] + (["nri-plugin"] if nri else [])
    agent = r.container("node-agent")
    assert agent["image"] == "mokka:0.1.0" and "command" not in agent
    assert agent["securityContext"]["privileged"] is True
    assert agent["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert agent["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert agent["ports"] == [{"name": "health", "containerPort": 9091, "protocol": "TCP"}]
    # The profile comes from the ConfigMap's directory (not subPath: kubelet updates reach it).
    assert f"--profile=/etc/mokka/profile/config.yaml" in agent["args"]
    assert all("subPath" not in m for c in pod["containers"] for m in c["volumeMounts"])
    assert r.configmap("-config")["data"]["config.yaml"] == open(
        os.path.join(ROOT, "mokka", "core", "profiles", f"{profile}.yaml")).read()
    annotations = ds["spec"]["template"]["metadata"]["annotations"]
    assert not any(k.startswith("checksum/") for k in annotations)
    assert annotations["prometheus.io/port"] == "9091"
    # The staging lock: memory-backed emptyDir shared by exactly these two containers.
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["staging-lock"]["emptyDir"]["medium"] == "Memory"
    users = [c["name"] for c in pod["containers"]
             if any(m["name"] == "staging-lock" for m in c["volumeMounts"])]
    assert users == [c["name"] for c in pod["containers"]]
    run_nvidia = next(m for m in agent["volumeMounts"] if m["name"] == "run-nvidia")
    assert (run_nvidia["mountPath"], run_nvidia["mountPropagation"]) == ("/host/run/nvidia", "Bidirectional")
    assert volumes["run-nvidia"]["hostPath"]["path"] == "/run/nvidia"
    assert volumes["agent-lock"]["hostPath"]["path"] == "/var/lib/mokka"
    assert pod.get("hostPID") is True          # containerd set-up on, systemd restarts: the default
    if topology:
        doc = yaml.safe_load(r.configmap("-topology")["data"]["topology.yaml"])
        assert doc["version"] == 1
        assert doc["domains"][0]["cliques"][1] == {"id": 1, "nodes": ["kind-worker3", "kind-worker4"]}
        assert "--topology=/etc/mokka/topology/topology.yaml" in agent["args"]
    else:
        assert "topology" not in volumes and not any(a.startswith("--topology") for a in agent["args"])
    if nri:
        plugin = r.container("nri-plugin")
        assert plugin["command"] == ["/usr/local/bin/nri-plugin"]
        assert plugin["securityContext"]["allowPrivilegeEscalation"] is False
        assert plugin["securityContext"].get("privileged") is not True
        assert plugin["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "nri-health"}
        assert plugin["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "nri-health"}
        mounts = {m["name"]: m for m in plugin["volumeMounts"]}
        assert mounts["overlay"]["readOnly"] is True and mounts["cdi"]["readOnly"] is True
        assert not mounts["nri-socket-dir"].get("readOnly")
        assert volumes["nri-socket-dir"]["hostPath"]["path"] == "/var/run/nri"
        assert f"--device-injection-mode={mode}" in plugin["args"]
    else:
        assert "nri-socket-dir" not in volumes
        assert "--nri-socket-path=" in agent["args"]      # NRI left as the host has it


@pytest.mark.parametrize("sets", [
    [], ["nri.deviceInjectionMode=cdi"], ["nri.enabled=false"], TOPOLOGY,
    ["nodeAgent.containerRuntime.enabled=false"],
    ["nodeAgent.containerRuntime.restartMode=none", "imex.mockChannels.enabled=true",
     "fabricmanager.fail=true", "fabricmanager.delaySeconds=2", "featureGates.IMEXDownload=true",
     "featureGates.ToolkitCDIAnnotations=false", "logging.level=debug", "logging.format=plain",
     "nri.excludedNamespaces={team-a,team-b}", "nodeAgent.healthPort=9191", "nri.healthPort=8181",
     "nodeAgent.containerRuntime.containerd.configDir=/etc/containerd/mokka.d"],
    ["nodeAgent.containerRuntime.containerd.config=/etc/k3s/containerd.toml",
     "nodeAgent.containerRuntime.containerd.configDir=/etc/k3s/conf.d", "nri.socketPath=/run/nri/x.sock",
     "nri.overlay.hostPath=/srv/nvml-mock", "nri.cdiSpecDir=/etc/cdi"],
], ids=["defaults", "cdi", "no-nri", "topology", "no-runtime-setup", "everything-set", "other-paths"])
def test_every_rendered_command_line_is_accepted_by_print_config(render, sets):
    r = render(*sets, namespace="gpu-test")
    agent = print_config(r.container("node-agent"))
    assert agent["command"] == "node-agent" and agent["mode"] == "serve"
    assert agent["host_root"] == "/host" and agent["node_name"] == NODE
    # Every host path the agent resolves lies on a hostPath volume at that same host path
    # (the staging lock: on the pod's emptyDir).
    container = r.container("node-agent")
    for key in ("overlay", "cdi_spec_dir", "root_lock", "kmsg"):
        inside = agent["resolved"][key]
        assert host_path_of(r, container, inside) == inside[len("/host"):], key
    assert host_path_of(r, container, agent["resolved"]["staging_lock"]) is None
    values = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    opts = dict(s.split("=", 1) for s in sets)
    assert agent["health_addr"] == f":{opts.get('nodeAgent.healthPort', 9091)}"
    if opts.get("nodeAgent.containerRuntime.enabled") == "false":
        assert agent["container_runtime"] == "none"
        assert r.pod.get("hostPID") is None
    else:
        assert agent["container_runtime"] == "containerd"
        for key in ("containerd_config", "containerd_config_dir"):
            inside = "/host" + agent[key]
            assert host_path_of(r, container, inside) == agent[key]
        assert agent["restart_mode"] == opts.get("nodeAgent.containerRuntime.restartMode", "systemd")
        assert r.pod.get("hostPID") is (True if agent["restart_mode"] == "systemd" else None)
    plugin_container = r.container("nri-plugin")
    if plugin_container is None:
        assert agent["nri_socket_path"] == ""
        return
    plugin = print_config(plugin_container)
    assert plugin["command"] == "nri-plugin"
    assert plugin["plugin"]["name"] == values["nri"]["pluginName"]
    assert plugin["config"]["node_name"] == NODE
    assert {"gpu-test", "kube-system"} <= set(plugin["config"]["excluded_namespaces"])
    assert plugin["agent_staged_url"] == f"http://127.0.0.1:{agent['health_addr'][1:]}/stagedz"
    assert plugin["feature_gates"] == agent["feature_gates"]
    assert (plugin["log_level"], plugin["log_format"]) == (agent["log_level"], agent["log_format"])
    assert agent["nri_socket_path"] == plugin["plugin"]["socket_path"]
    assert plugin["config"]["overlay_host_path"] == agent["overlay_host_path"]
    # The two staging-lock paths name one file: the same emptyDir, in each container.
    def lock_volume(container, path):
        mount = max((m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")),
                    key=lambda m: len(m["mountPath"]))
        return mount["name"], path[len(mount["mountPath"]):]
    assert lock_volume(container, agent["resolved"]["staging_lock"]) == \
        lock_volume(plugin_container, plugin["staging_lock_path"]) == ("staging-lock", "/staging.lock")
    # The plugin checks the overlay and the CDI spec where the host has them.
    for path in (plugin["host"]["devices"], plugin["host"]["cdi_spec"]):
        assert host_path_of(r, plugin_container, path) == path


def test_everything_set_reaches_the_command_lines(render):
    r = render("nodeAgent.containerRuntime.restartMode=none", "imex.mockChannels.enabled=true",
               "imex.mockChannels.channelCount=16", "fabricmanager.fail=true",
               "featureGates.IMEXDownload=true", "logging.level=warn", "nri.excludedNamespaces={team-a}",
               "nri.pluginIndex=7", namespace="gpu-test")
    agent, plugin = print_config(r.container("node-agent")), print_config(r.container("nri-plugin"))
    assert agent["imex_channels"] == 16 and agent["fabricmanager_fail"] is True
    assert agent["feature_gates"] == {"IMEXDownload": True, "ToolkitCDIAnnotations": False}
    assert agent["log_level"] == plugin["log_level"] == "warning"
    assert plugin["config"]["excluded_namespaces"] == ["gpu-test", "kube-system", "team-a"]
    assert plugin["plugin"]["index"] == "07"
    assert agent["shutdown_timeout"] == 25.0 and r.pod["terminationGracePeriodSeconds"] == 30


@pytest.mark.parametrize("sets, want", [
    ([], ""), (["gpu.profile=a100", "gpu.mig.layout=all-balanced"], "all-balanced"),
], ids=["off by default", "a100 all-balanced"])
def test_the_mig_layout_reaches_the_agent(render, sets, want):
    agent = render(*sets).container("node-agent")
    assert print_config(agent)["mig_layout"] == want
    assert any(a.startswith("--mig-layout") for a in agent["args"]) is bool(want)


@pytest.mark.parametrize("sets, want", [
    ([], 0), (["gpu.count=3"], 3), (["gpu.profile=t4", "gpu.count=64"], 64),
], ids=["the profile's count by default", "3", "t4 64"])
def test_the_gpu_count_reaches_the_agent_and_leaves_the_profile_as_it_is(render, sets, want):
    r = render(*sets)
    agent = r.container("node-agent")
    assert print_config(agent)["gpu_count"] == want
    assert any(a.startswith("--gpu-count") for a in agent["args"]) is bool(want)
    profile = "t4" if "gpu.profile=t4" in sets else "gb300"
    with open(os.path.join(ROOT, "mokka", "core", "profiles", f"{profile}.yaml")) as f:
        assert r.configmap("-config")["data"]["config.yaml"] == f.read()


@pytest.mark.parametrize("enabled, want", [("true", True), ("false", False)])
def test_fabricmanager_enabled_reaches_the_agent(render, enabled, want):
    r = render(f"fabricmanager.enabled={enabled}")
    assert print_config(r.container("node-agent"))["fabricmanager"] is want


@pytest.mark.parametrize("tier, want", [("", "full"), ("full", "full"), ("sysfs", "sysfs")])
def test_the_infiniband_tier_reaches_the_plugin(render, tier, want):
    r = render(f"infiniband.mockTier={tier}")
    assert print_config(r.container("nri-plugin"))["config"]["infiniband_tier"] == want
    # Only off edits the profile: the others ship gb300 as it is.
    with open(os.path.join(ROOT, "mokka", "core", "profiles", "gb300.yaml")) as f:
        assert r.configmap("-config")["data"]["config.yaml"] == f.read()


@pytest.mark.parametrize("sets,message", [
    (["infiniband.mockTier=verbs"], "mockTier"),
    (["nri.deviceInjectionMode=nodes"], 'nri.deviceInjectionMode must be "raw" or "cdi", got "nodes"'),
    (["updateStrategy.rollingUpdate.maxSurge=1"],
     "updateStrategy.rollingUpdate.maxSurge must be 0 or unset while nodeAgent.containerRuntime.enabled"),
    (["updateStrategy.rollingUpdate.maxSurge=10%"], 'got "10%"'),
    (["gpu.profile=v100"], 'gpu.profile "v100" is not a built-in profile'),
    (["metrics.port=9999"], "metrics.port 9999 is not served"),
    (["nri.healthPort=9091"], "nodeAgent.healthPort and nri.healthPort are both 9091"),
    (["topology.enabled=true"], "topology.domains is empty"),
    (["gpu.count=65"], "gpu.count"),
    (["nri.pluginIndex=100"], "nri.pluginIndex"),
    (["gpu.mig.layout=All Balanced"], "gpu.mig.layout"),
])
def test_refusals_fail_the_render_with_their_message(helm, sets, message):
    done = helm_template(helm, *sets)
    assert done.returncode != 0 and done.stdout == ""
    assert message in done.stderr


def test_max_surge_is_allowed_without_the_runtime_setup(render):
    r = render("nodeAgent.containerRuntime.enabled=false", "updateStrategy.rollingUpdate.maxSurge=1",
               "updateStrategy.rollingUpdate.maxUnavailable=0")
    assert r.daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] == 1


def compile_profile(path: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "mokka", "compile", "--profile", path],
                          env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("profile", ["gb300", "t4"])
def test_values_folded_into_the_profile_compile_as_the_same_edit_in_python(render, tmp_path, profile):
    r = render(f"gpu.profile={profile}", "gpu.failureInjection.enabled=true",
               "gpu.failureInjection.mode=ecc_uncorrectable", "gpu.failureInjection.probability=0.25",
               "gpu.failureInjection.after_calls=10", "gpu.dynamicMetrics.enabled=true",
               "gpu.dynamicMetrics.seed=7", "gpu.dynamicMetrics.temperature.base_c=40",
               "infiniband.mockTier=off")
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(r.configmap("-config")["data"]["config.yaml"])
    with open(os.path.join(ROOT, "mokka", "core", "profiles", f"{profile}.yaml")) as f:
        doc = yaml.safe_load(f)
    dd = doc["device_defaults"]
    dd["failure"] = {"mode": "ecc_uncorrectable", "probability": 0.25, "after_calls": 10}
    dd["dynamic_metrics"] = {
        "seed": 7,
        "temperature": {"base_c": 40, "variance_c": 3, "ramp_c": 15, "ramp_period_sec": 120},
        "power": doc["dynamic_metrics_defaults"]["power"],
        "utilization": {"pattern": "burst", "gpu_min": 0, "gpu_max": 100, "memory_min": 0,
                        "memory_max": 100, "burst_period_sec": 30}}
    doc.setdefault("infiniband", {})["enabled"] = False
    expected = tmp_path / "expected.yaml"
    expected.write_text(yaml.safe_dump(doc))
    got, want = compile_profile(str(rendered)), compile_profile(str(expected))
    for state in (got, want):
        del state["profile"]              # where the file was read from, and its digest
    assert got == want
    assert got["gpus"][1]["failure"] == {"mode": "ecc_uncorrectable", "probability": 0.25,
                                         "after_calls": 10}
    assert got["gpus"][0]["dynamic_metrics"]["temperature"]["base_c"] == 40
    assert got["gpus"][0]["dynamic_metrics"]["utilization"]["pattern"] == "burst"
    assert got["gpus"][0]["dynamic_metrics"]["seed"] == 7


def test_custom_config_wins_and_the_count_reaches_the_agent_for_it(render, tmp_path):
    with open(os.path.join(ROOT, "mokka", "core", "profiles", "h100.yaml")) as f:
        custom = f.read()
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"gpu": {"profile": "t4", "customConfig": custom}}))
    r = render(values=str(values))
    assert r.configmap("-config")["data"]["config.yaml"] == custom
    r = render("gpu.count=3", values=str(values))
    assert r.configmap("-config")["data"]["config.yaml"] == custom
    assert print_config(r.container("node-agent"))["gpu_count"] == 3


def test_helm_package(helm, tmp_path):
    done = subprocess.run([helm, "package", CHART, "--destination", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (archive,) = tmp_path.iterdir()
    assert archive.name == "nvml-mock-0.1.0.tgz"
    with tarfile.open(archive) as tar:
        members = set(tar.getnames())
    assert {"nvml-mock/Chart.yaml", "nvml-mock/values.schema.json", "nvml-mock/templates/NOTES.txt",
            "nvml-mock/profiles/gb300.yaml"} <= members
