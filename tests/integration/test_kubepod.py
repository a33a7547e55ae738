"""The stand-in kubelet (tests/integration/kubepod.py) does what the kubelet does with a
pod template: these pin its translation, so a chart test that passes through it means
what it says."""

from __future__ import annotations

import os

import pytest

from tests.integration import kubepod


@pytest.mark.parametrize("ref, want", [
    ("mokka:0.1.0", "docker.io/library/mokka:0.1.0"),
    ("mokka", "docker.io/library/mokka:latest"),
    ("nvidia/cuda:12.4", "docker.io/nvidia/cuda:12.4"),
    ("ghcr.io/a/b:1", "ghcr.io/a/b:1"),
    ("localhost:5000/x", "localhost:5000/x:latest"),
    ("docker.io/library/busybox:1", "docker.io/library/busybox:1"),
])
def test_image_references_normalise_as_the_kubelet_does(ref, want):
    assert kubepod.normalise_image(ref) == want


@pytest.mark.parametrize("text, env, want", [
    ("--node-name=$(NODE_NAME)", {"NODE_NAME": "n1"}, "--node-name=n1"),
    ("$(UNSET)", {}, "$(UNSET)"),
    ("$$(NODE_NAME)", {"NODE_NAME": "n1"}, "$(NODE_NAME)"),
    ("$(A)-$(B)", {"A": "1", "B": "2"}, "1-2"),
    ("plain $HOME", {"HOME": "x"}, "plain $HOME"),
])
def test_dollar_paren_expansion(text, env, want):
    assert kubepod.expand(text, env) == want


def test_env_resolves_field_refs_and_earlier_entries():
    ident = kubepod.PodIdentity(name="p", namespace="ns1", node_name="worker-3")
    env = kubepod.container_env({"env": [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "WHERE", "value": "$(NODE_NAME)/x"},
        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]}, ident)
    assert env == [("NODE_NAME", "worker-3"), ("WHERE", "worker-3/x"), ("NS", "ns1")]


def test_unmodelled_features_are_refused_not_skipped():
    ident = kubepod.PodIdentity(name="p", namespace="n", node_name="x")
    with pytest.raises(kubepod.PodSpecError, match="secretKeyRef"):
        kubepod.container_env({"env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}, ident)


def test_configmap_update_swaps_the_data_link(tmp_path):
    root = tmp_path / "cm"
    root.mkdir()
    kubepod.KubePod.update_configmap_dir(root, {"config.yaml": "a: 1\n"})
    assert (root / "config.yaml").read_text() == "a: 1\n"
    first = os.readlink(root / "..data")
    kubepod.KubePod.update_configmap_dir(root, {"config.yaml": "a: 2\n"})
    assert (root / "config.yaml").read_text() == "a: 2\n"
    assert os.readlink(root / "..data") != first
    assert not (root / first).exists()
    assert os.readlink(root / "config.yaml") == "..data/config.yaml"


def test_a_template_runs_with_its_volumes_env_and_hooks(containerd, tmp_path):
    scratch = tmp_path / "host"
    scratch.mkdir()
    template = {
        "metadata": {"labels": {"app": "t"}},
        "spec": {
            "terminationGracePeriodSeconds": 3,
            "volumes": [
                {"name": "data", "hostPath": {"path": "/var/lib/thing", "type": "DirectoryOrCreate"}},
                {"name": "cfg", "configMap": {"name": "t-config"}},
                {"name": "lock", "emptyDir": {"medium": "Memory"}},
            ],
            "containers": [{
                "name": "main",
                "image": "mokka-busybox:test",
                "command": ["sh", "-c"],
                "args": ["echo $(NODE_NAME) > /data/node; exec sleep 3600"],
                "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True},
                    {"name": "lock", "mountPath": "/run/lock"},
                ],
                "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
                "readinessProbe": {"exec": {"command": ["test", "-s", "/data/node"]}},
                "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo bye > /data/stopped"]}}},
            }],
        },
    }
    cri = containerd.client()
    pod = kubepod.KubePod(cri, template, host_path=lambda p: str(scratch) + p, scratch=tmp_path,
                          configmaps={"t-config": {"config.yaml": "k: v\n"}}, node_name="worker-7")
    pod.start()
    try:
        pod.wait_ready(timeout=30)
        assert (scratch / "var/lib/thing/node").read_text() == "worker-7\n"
        assert pod.exec("main", ["cat", "/etc/cfg/config.yaml"]).stdout == "k: v\n"
        assert pod.exec("main", ["touch", "/etc/cfg/x"]).exit_code != 0
        assert pod.exec("main", ["touch", "/rootfs-write"]).exit_code != 0
        mounts = pod.exec("main", ["cat", "/proc/mounts"]).stdout
        assert any(line.split()[1] == "/run/lock" and line.split()[0] == "tmpfs" for line in mounts.splitlines())
        status = pod.exec("main", ["cat", "/proc/self/status"]).stdout
        assert "NoNewPrivs:\t1" in status
    finally:
        pod.stop()
    assert (scratch / "var/lib/thing/stopped").read_text() == "bye\n"
    with open("/proc/mounts") as f:
        left = [line for line in f if str(tmp_path / ".kubelet") in line or str(scratch) in line]
    assert left == []
