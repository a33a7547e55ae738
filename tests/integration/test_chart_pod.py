"""The chart's pod runs here: real Helm renders the DaemonSet, the stand-in kubelet
(kubepod.py) runs its pod template in the real containerd from the image image/build.sh
built, with every hostPath under a scratch root made rshared. Both containers become
ready, the agent stages the node, the plugin registers, and a pod created through CRI
with the devices annotation is injected and lists the profile's GPUs with nvidia-smi.
Stopping the pod leaves the scratch root as it was.
"""

from __future__ import annotations

import json
import os
import tomllib
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from mokka.core import names
from tests.compiled import state_of
from tests import peers
from tests.agent.treelist import listing
from tests.integration import kubepod
from tests.integration.busybox import build_busybox_image
from tests.integration.nodes import GLIBC_IMAGE
from tests.integration.pods import (container_spec, create_container, exec_sync, remove_pod,
                                    run_pod, start_container)
from tests.netutil import free_port, http_get
from tests.waiting import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "chart")
NODE = "worker-1"
# The profile the chart installs when nothing is said, and what NVIDIA's nvidia-smi 550
# prints for it (gb300 is Blackwell: 550 predates it and names it by its product name).
PROFILE = "gb300"
GPUS = 8


def render(helm: str, *sets: str) -> list[dict]:
    argv = [helm, "template", "nvml-mock", CHART, "--namespace", "mokka", "--kube-version", "1.31.0"]
    for s in sets:
        argv += ["--set", s]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def mounts_under(path: str) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(path + "/")]


@pytest.fixture
def scratch_host(tmp_path):
    """A scratch root that is its own rshared mount, as a node's / is: the agent's
    Bidirectional /run/nvidia mount needs a shared source."""
    host = tmp_path / "host"
    host.mkdir()
    subprocess.run(["mount", "--bind", str(host), str(host)], check=True)
    subprocess.run(["mount", "--make-rshared", str(host)], check=True)
    yield str(host)
    # Anything still mounted is a failure the test reports; unmount so the machine is clean.
    for mnt in sorted(mounts_under(str(host)), key=len, reverse=True):
        subprocess.run(["umount", "-l", mnt], check=False)
    subprocess.run(["umount", "-l", str(host)], check=False)


CONTAINERD_CONFIG = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n'


@pytest.mark.parametrize("mode, runtime_setup", [("raw", False), ("cdi", False), ("raw", True)],
                         ids=["raw", "cdi", "raw-containerd-setup"])
def test_the_rendered_daemonset_pod_runs_stages_registers_and_injects(
        mode, runtime_setup, containerd_factory, mokka_image, tmp_path, scratch_host):
    helm = peers.peer("HELM")
    # containerd reads CDI specs where the chart's agent writes them: the scratch root's
    # /var/run/cdi (the chart's nri.cdiSpecDir default).
    containerd = containerd_factory(enable_cdi=mode == "cdi",
                                    cdi_spec_dirs=[scratch_host + "/var/run/cdi"])
    archive, ref = mokka_image.path, mokka_image.ref
    containerd.import_image(archive, ref)
    image = build_busybox_image(tmp_path / "glibc-image.tar", ref=GLIBC_IMAGE,
                                   extra_root=peers.peer("LIBC6_ROOT"))
    containerd.import_image(image, GLIBC_IMAGE)

    overlay = scratch_host + names.OVERLAY_HOST_PATH
    agent_port, plugin_port = free_port(), free_port()
    sets = (
        # containerd is the test's own: with the set-up on, the agent edits the scratch
        # root's containerd config and only logs the restart (restartMode none).
        f"nodeAgent.containerRuntime.enabled={str(runtime_setup).lower()}",
        "nodeAgent.containerRuntime.restartMode=none",
        f"nri.socketPath={containerd.nri_socket}",
        # Host paths that containerd itself resolves (the overlay the plugin mounts into
        # containers) must be real paths on this machine: the scratch root's.
        f"nri.overlay.hostPath={overlay}",
        f"nodeAgent.healthPort={agent_port}",
        f"nri.healthPort={plugin_port}",
        "nodeAgent.terminationGracePeriodSeconds=20",
        f"nri.deviceInjectionMode={mode}",
    )
    docs = render(helm, *sets)
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    configmaps = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    template = daemonset["spec"]["template"]
    assert [c["name"] for c in template["spec"]["containers"]] == ["node-agent", "nri-plugin"]
    assert kubepod.normalise_image(template["spec"]["containers"][0]["image"]) == ref

    own = (str(tmp_path) + "/", str(containerd.sockdir) + "/")

    def host_path(path: str) -> str:
        # Paths the test already placed under its scratch dirs (and the test containerd's
        # sockets) stay; the rest move under the scratch root.
        return path if path.startswith(own) else scratch_host + path

    # A node's /dev/kmsg exists; the scratch root gets a plain file in its place. So do
    # /proc/driver and /sys/module (the agent looks there for a real NVIDIA driver: none).
    os.makedirs(scratch_host + "/dev")
    open(scratch_host + "/dev/kmsg", "w").close()
    os.makedirs(scratch_host + "/proc/driver")
    os.makedirs(scratch_host + "/sys/module")
    config_toml = scratch_host + "/etc/containerd/config.toml"
    if runtime_setup:
        # What the set-up needs of a node: containerd's config, and the PATH directories
        # it looks in for the toolkit (hostPath type Directory: they must exist).
        os.makedirs(os.path.dirname(config_toml))
        with open(config_toml, "w") as f:
            f.write(CONTAINERD_CONFIG)
        for d in ("/usr/bin", "/usr/sbin", "/usr/local"):
            os.makedirs(scratch_host + d)
        # The agent sets up containerd only where the host has one on its PATH (it only
        # looks: restartMode none never runs it).
        with open(scratch_host + "/usr/bin/containerd", "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(scratch_host + "/usr/bin/containerd", 0o755)
    assert "hostPID" not in template["spec"], "restartMode none needs no host PID"
    before = listing(scratch_host)

    pod = kubepod.KubePod(containerd.client(), template, host_path=host_path, scratch=tmp_path,
                          configmaps=configmaps, name="nvml-mock-abcde", namespace="mokka",
                          node_name=NODE)
    pod.start()
    try:
        pod.wait_ready(timeout=120)
        # The agent staged the node: the driver root, the state, the library.
        state = state_of(os.path.join(overlay, "driver", "config", names.PROFILE_FILE))
        assert len(state["gpus"]) == GPUS
        # /stagedz says so; the plugin's /readyz says it registered.
        with urllib.request.urlopen(f"http://127.0.0.1:{agent_port}/stagedz", timeout=5) as resp:
            assert resp.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{plugin_port}/readyz", timeout=5) as resp:
            assert resp.status == 200
        assert "nvml-mock" in containerd.log_text()
        if runtime_setup:
            # Mokka's drop-in, imported by the node's config: CDI on, NRI on at the socket.
            drop_in = scratch_host + "/etc/containerd/conf.d/50-mokka.toml"
            assert os.path.exists(drop_in), pod.logs("node-agent")[-5000:]
            with open(drop_in, "rb") as f:
                setup = tomllib.load(f)
            cri_plugin = setup["plugins"]["io.containerd.grpc.v1.cri"]
            assert cri_plugin["enable_cdi"] is True
            assert setup["plugins"]["io.containerd.nri.v1.nri"]["socket_path"] == containerd.nri_socket
            with open(config_toml, "rb") as f:
                assert tomllib.load(f)["imports"] == ["/etc/containerd/conf.d/*.toml"]
        # The agent's driver bind reached the host through the Bidirectional mount.
        assert scratch_host + "/run/nvidia/driver" in mounts_under(scratch_host)
        assert os.path.exists(scratch_host + "/run/nvidia/driver/usr/bin/nvidia-smi")
        # The liveness probes pass too, as the kubelet would run them.
        for name in ("node-agent", "nri-plugin"):
            ok, detail = pod.probe(name, "livenessProbe")
            assert ok, (name, detail)

        # A workload that opts in with the devices annotation is injected.
        cri = containerd.client()
        pod_id, pod_config = run_pod(cri, "workload", "default", {names.ANNOTATION_DEVICES: "true"})
        cid = create_container(cri, pod_id, pod_config, "app", None, image=GLIBC_IMAGE)
        devices = [d["path"] for d in container_spec(cri, cid)["linux"].get("devices", [])]
        assert [f"/dev/nvidia{i}" for i in range(GPUS)] == [d for d in devices if d[11:].isdigit()]
        # Each mode as chosen: cdi found the agent's spec through the plugin's read-only
        # CDI mount (else it warns and falls back to raw device nodes).
        assert "falling back" not in pod.logs("nri-plugin")
        start_container(cri, cid)
        listed = exec_sync(cri, cid, ["nvidia-smi", "-L"])
        assert listed.exit_code == 0, listed
        want = [f"GPU {i}: " for i in range(GPUS)]
        lines = listed.stdout.splitlines()
        assert [line[:len(w)] for line, w in zip(lines, want)] == want and len(lines) == GPUS
        uuids = [g["uuid"] for g in state["gpus"]]
        assert [line.rsplit("(UUID: ", 1)[1].rstrip(")") for line in lines] == uuids
        # A pod in the release namespace is excluded (the chart prepends it).
        ex_id, ex_config = run_pod(cri, "excluded", "mokka", {names.ANNOTATION_DEVICES: "true"})
        ex_cid = create_container(cri, ex_id, ex_config, "app", None, image=GLIBC_IMAGE)
        spec = container_spec(cri, ex_cid)
        assert not any(m["destination"].startswith("/opt/nvml-mock") for m in spec.get("mounts", []))
        remove_pod(cri, ex_id)
        remove_pod(cri, pod_id)

        if mode == "raw":
            # helm upgrade --set gpu.count=2: the ConfigMap changes, and the pod template
            # only by the agent's MOKKA_AGENT_GPU_COUNT (a cluster rolls the pods); the
            # kubelet swaps the mounted files and the running agent's watch restages the
            # node with 2 GPUs from the ConfigMap alone.
            upgraded = render(helm, *sets, "gpu.count=2")
            (new_ds,) = [d for d in upgraded if d["kind"] == "DaemonSet"]
            new_agent = new_ds["spec"]["template"]["spec"]["containers"][0]
            assert {"name": "MOKKA_AGENT_GPU_COUNT", "value": "2"} in new_agent["env"]
            new_agent["env"].remove({"name": "MOKKA_AGENT_GPU_COUNT", "value": "2"})
            assert new_ds["spec"]["template"] == template
            new_maps = {d["metadata"]["name"]: d["data"] for d in upgraded if d["kind"] == "ConfigMap"}
            assert new_maps["nvml-mock-config"] != configmaps["nvml-mock-config"]
            generation = json.loads(http_get(agent_port, "/stagedz")[1])["generation"]
            kubepod.KubePod.update_configmap_dir(Path(pod.volume_path("profile")),
                                                 new_maps["nvml-mock-config"])

            def restaged() -> bool:
                # Staged, not merely started: the state file is written before the rest
                # of the tree, and a container created in between is left alone.
                status, body = http_get(agent_port, "/stagedz")
                if status != 200 or json.loads(body).get("generation", 0) <= generation:
                    return False
                staged_config = os.path.join(overlay, "driver", "config", names.PROFILE_FILE)
                return len(state_of(staged_config)["gpus"]) == 2
            wait_until(restaged, "the agent to restage 2 GPUs after the ConfigMap changed",
                       timeout=60)
            pod_id, pod_config = run_pod(cri, "after", "default", {names.ANNOTATION_DEVICES: "true"})
            cid = create_container(cri, pod_id, pod_config, "app", None, image=GLIBC_IMAGE)
            start_container(cri, cid)
            listed = exec_sync(cri, cid, ["nvidia-smi", "-L"])
            assert [line[:7] for line in listed.stdout.splitlines()] == ["GPU 0: ", "GPU 1: "], listed
            remove_pod(cri, pod_id)
    finally:
        pod.stop()

    # The agent tore the node down within the grace period: no mount left, and the
    # scratch root holds what it held plus only the (empty) directories the kubelet
    # created for DirectoryOrCreate hostPaths.
    assert mounts_under(scratch_host) == []
    after = listing(scratch_host)
    created = set()
    for volume in template["spec"]["volumes"]:
        path = host_path(volume.get("hostPath", {}).get("path", "/"))
        while path.startswith(scratch_host + "/"):
            created.add(os.path.relpath(path, scratch_host))
            path = os.path.dirname(path)
    # Every path as it was (content, mode, links), plus only the kubelet's empty directories.
    assert [line for line in before if line not in after] == []
    added = [line for line in after if line not in before]
    assert [line for line in added if line.split(" ")[0] not in created or line.split(" ")[1] != "dir"] == []
