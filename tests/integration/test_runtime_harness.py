"""Proves the real-containerd harness itself (runtime.py + conftest.py)."""

from __future__ import annotations

import copy
import json
import os
import stat
import tarfile

import jsonschema
import pytest

from tests.integration.busybox import IMAGE_REF, build_busybox_image
from tests.integration.cdischema import validate_cdi_spec
from tests.integration.containerd import Containerd
from tests.integration.kernel import kernel_refusal_reason
from tests.integration.leftovers import cgroup_dirs
from tests.integration.pods import (container_spec, container_state, create_container, exec_sync,
                                    remove_pod, run_pod, start_and_exec, start_container)
from tests.integration.runtime import HarnessError, runtime_paths
from tests.waiting import wait_until

pytestmark = pytest.mark.runtime


def test_containerd_starts_with_nri_on(containerd, cri):
    version = cri.version()
    assert version.runtime_name == "containerd"
    assert version.runtime_version.startswith("1.7."), version.runtime_version
    assert containerd.running()
    assert stat.S_ISSOCK(os.stat(containerd.nri_socket).st_mode), containerd.nri_socket
    assert stat.S_ISSOCK(os.stat(containerd.cri_socket).st_mode)
    config = containerd.config_path.read_text()
    assert 'plugin_registration_timeout = "5s"' in config
    assert 'plugin_request_timeout = "2s"' in config
    # The NRI plugin really loaded (not silently skipped) and the CRI plugin uses it.
    log = containerd.log_text()
    assert "io.containerd.nri.v1.nri" in log
    for line in log.splitlines():
        if "io.containerd.nri.v1.nri" in line or "io.containerd.grpc.v1.cri" in line:
            assert "failed to load" not in line and "skip loading" not in line, line
    images = [tag for img in cri.list_images() for tag in img.repo_tags]
    assert IMAGE_REF in images


def test_pod_container_exec_and_spec(containerd, cri):
    pod_id, pod_config = run_pod(cri, "harness-pod", "harness-ns", {"example.com/pod": "yes"})
    pods = {p.id: p for p in cri.list_pods()}
    assert pods[pod_id].metadata.name == "harness-pod"

    cid = create_container(cri, pod_id, pod_config, "app", ["sleep", "3600"],
                              annotations={"example.com/ctr": "1"}, envs={"MOKKA_HARNESS": "on"})
    spec = container_spec(cri, cid)
    assert spec["ociVersion"]
    assert spec["process"]["args"] == ["sleep", "3600"]
    assert "MOKKA_HARNESS=on" in spec["process"]["env"]
    # containerd 1.7 copies CRI container annotations into the OCI spec only when the
    # runtime's container_annotations allows them; its own io.kubernetes.cri.* are there.
    assert spec["annotations"]["io.kubernetes.cri.container-name"] == "app"
    assert spec["annotations"]["io.kubernetes.cri.sandbox-id"] == pod_id
    assert spec["linux"]["cgroupsPath"].startswith(containerd.cgroup_parent + "/")

    result = start_and_exec(cri, cid, ["echo", "hi"])
    assert result.exit_code == 0, result
    assert result.stdout == "hi\n"
    assert container_state(cri, cid) == "CONTAINER_RUNNING"

    # host network: the container shares the host's network namespace
    netns = exec_sync(cri, cid, ["readlink", "/proc/self/ns/net"]).stdout.strip()
    assert netns == os.readlink("/proc/self/ns/net")
    env = exec_sync(cri, cid, ["sh", "-c", "echo $MOKKA_HARNESS"])
    assert env.stdout.strip() == "on"
    failing = exec_sync(cri, cid, ["sh", "-c", "echo oops >&2; exit 3"])
    assert (failing.exit_code, failing.stderr) == (3, "oops\n")

    remove_pod(cri, pod_id)
    assert cri.list_containers() == []
    assert cri.list_pods() == []


def test_restart_keeps_cri_usable(containerd, cri):
    pod_id, pod_config = run_pod(cri, "before-restart")
    cid = create_container(cri, pod_id, pod_config, "app", None)  # image default: sleep 3600
    start_container(cri, cid)
    old_pid = containerd.pid

    containerd.restart()

    assert containerd.pid != old_pid and containerd.running()
    assert os.path.exists(containerd.nri_socket)
    assert cri.version().runtime_name == "containerd"
    # the running container survived the restart and is still reachable
    wait_until(lambda: container_state(cri, cid) == "CONTAINER_RUNNING",
               "the container running after the restart", timeout=10)
    assert exec_sync(cri, cid, ["echo", "still-here"]).stdout == "still-here\n"
    # and new work is accepted
    pod2, cfg2 = run_pod(cri, "after-restart")
    cid2 = create_container(cri, pod2, cfg2, "app", ["sleep", "60"])
    assert start_and_exec(cri, cid2, ["cat", "/proc/1/cmdline"]).stdout.startswith("sleep")
    assert "starting containerd" in containerd.log_text().split("mokka harness:")[-1]


def test_stop_cleans_up(runtime, cri_api, container_support, tmp_path):
    instance = Containerd(runtime, tmp_path / "ctrd")
    client = instance.client()
    pod_id, cfg = run_pod(client, "to-clean")
    cid = create_container(client, pod_id, cfg, "app", ["sleep", "3600"])
    start_container(client, cid)
    pid = instance.pid
    instance.stop()
    assert not instance.running()
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    mounts = open("/proc/self/mountinfo").read()
    assert str(tmp_path / "ctrd") not in mounts
    assert cgroup_dirs(instance.cgroup_parent) == []
    assert "RemovePodSandbox" in instance.log_text()


def test_busybox_image_layout(runtime, tmp_path):
    path = build_busybox_image(tmp_path / "img.tar", runtime.busybox)
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
        assert {"oci-layout", "index.json"} <= names
        index = json.load(tar.extractfile("index.json"))
        (manifest_desc,) = index["manifests"]
        assert manifest_desc["annotations"]["org.opencontainers.image.ref.name"] == IMAGE_REF
        digest = manifest_desc["digest"].split(":", 1)[1]
        manifest = json.load(tar.extractfile(f"blobs/sha256/{digest}"))
        config = json.load(tar.extractfile("blobs/sha256/" + manifest["config"]["digest"].split(":", 1)[1]))
        assert config["config"]["Cmd"] == ["sleep", "3600"]
        layer = tar.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].split(":", 1)[1])
        with tarfile.open(fileobj=layer) as layer_tar:
            members = {m.name: m for m in layer_tar.getmembers()}
    assert members["bin/busybox"].isfile()
    for applet in ("sh", "ls", "cat", "env", "sleep", "test", "stat", "mount"):
        assert members[f"bin/{applet}"].issym() and members[f"bin/{applet}"].linkname == "busybox"


# ----------------------------------------------------------------------------- CDI schema

GOOD_CDI_SPEC = {
    "cdiVersion": "0.6.0",
    "kind": "example.com/x",
    "devices": [
        {
            "name": "dev0",
            "containerEdits": {
                "deviceNodes": [{"path": "/dev/x0", "type": "c", "major": 1, "minor": 3}],
            },
        }
    ],
}


def test_cdi_schema_accepts_valid_spec(runtime):
    validate_cdi_spec(GOOD_CDI_SPEC)
    validate_cdi_spec(GOOD_CDI_SPEC, runtime.cdi_schema_dir)


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].pop("path"), "path"),  # via defs.json $ref
        (lambda s: s["devices"][0]["containerEdits"]["deviceNodes"][0].update(major="one"), "major"),
        (lambda s: s["devices"][0].pop("containerEdits"), "containerEdits"),
        (lambda s: s.pop("kind"), "kind"),
    ],
    ids=["node-without-path", "major-not-int", "device-without-edits", "no-kind"],
)
def test_cdi_schema_rejects_invalid_spec(runtime, mutate, where):
    spec = copy.deepcopy(GOOD_CDI_SPEC)
    mutate(spec)
    with pytest.raises(jsonschema.ValidationError) as info:
        validate_cdi_spec(spec)
    assert where in str(info.value)


def test_cdi_enabled_containerd_injects_device(containerd_factory, tmp_path):
    cdi_dir = tmp_path / "cdi-specs"
    cdi_dir.mkdir()
    spec = copy.deepcopy(GOOD_CDI_SPEC)
    spec["kind"] = "example.com/dev"  # NOT "example.com/x": see test_cdi_one_char_class_crashes_containerd
    node = spec["devices"][0]["containerEdits"]["deviceNodes"][0]
    node.update(hostPath="/dev/null")
    spec["devices"][0]["containerEdits"]["env"] = ["FROM_CDI=1"]
    validate_cdi_spec(spec)
    (cdi_dir / "x.json").write_text(json.dumps(spec))

    containerd = containerd_factory(enable_cdi=True, cdi_spec_dirs=[cdi_dir])
    assert "enable_cdi = true" in containerd.config_path.read_text()
    cri = containerd.client()
    pod_id, cfg = run_pod(cri, "cdi-pod")
    by_field = create_container(cri, pod_id, cfg, "by-field", ["sleep", "60"], cdi_devices=["example.com/dev=dev0"])
    by_annotation = create_container(cri, pod_id, cfg, "by-annotation", ["sleep", "60"],
                                        annotations={"cdi.k8s.io/mokka": "example.com/dev=dev0"})
    for cid in (by_field, by_annotation):
        oci = container_spec(cri, cid)
        assert "/dev/x0" in [d["path"] for d in oci["linux"].get("devices", [])], oci["linux"].get("devices")
        assert "FROM_CDI=1" in oci["process"]["env"]


def test_cdi_one_char_class_crashes_containerd(containerd_factory, tmp_path):
    """A hazard, pinned: containerd 1.7.24 (CDI 0.8.0 parser) PANICS on a CDI spec whose
    vendor or class name is one character ("slice bounds out of range [1:0]") although
    the CDI JSON schema accepts it. Mokka must never write such a spec."""
    cdi_dir = tmp_path / "cdi-specs"
    cdi_dir.mkdir()
    validate_cdi_spec(GOOD_CDI_SPEC)  # kind "example.com/x": schema-valid
    (cdi_dir / "x.json").write_text(json.dumps(GOOD_CDI_SPEC))
    with pytest.raises(HarnessError, match="exited") as info:
        containerd_factory(enable_cdi=True, cdi_spec_dirs=[cdi_dir])
    assert "slice bounds out of range" in str(info.value)


def test_native_snapshotter_works(containerd_factory):
    # the fallback used when an overlay mount is refused
    containerd = containerd_factory(snapshotter="native")
    cri = containerd.client()
    pod_id, cfg = run_pod(cri, "native-pod")
    cid = create_container(cri, pod_id, cfg, "app", ["sleep", "60"])
    assert start_and_exec(cri, cid, ["cat", "/etc/hosts"]).exit_code == 0
    assert 'snapshotter = "native"' in containerd.config_path.read_text()


@pytest.mark.parametrize("text, refused", [
    ("runc create failed: unable to start container process: error during container init: "
     "error mounting \"proc\" to rootfs at \"/proc\": mount proc:/proc: operation not permitted", True),
    ("unshare: operation not permitted", True),
    ("failed to create shim task: OCI runtime create failed: exec: \"nosuch\": executable file not found in $PATH",
     False),
    ("failed to get sandbox image \"docker.io/library/mokka-busybox:test\": not found", False),
])
def test_kernel_refusal_classification(text, refused):
    assert bool(kernel_refusal_reason(text)) is refused


def test_missing_runtime_gives_none(tmp_path, monkeypatch):
    monkeypatch.setenv("MOKKA_RUNTIME_DIR", str(tmp_path))
    assert runtime_paths() is None
    (tmp_path / "paths.env").write_text("CONTAINERD=/nonexistent\n")
    assert runtime_paths() is None
