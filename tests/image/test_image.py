"""The image image/build.sh makes, run in the real containerd through CRI: read-only
root filesystem, the agent staging a node with NVIDIA's nvidia-smi from the image,
every command and link answering, the non-root user."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.containerd import Containerd
from tests.integration.pods import (container_state, container_status, exec_sync, run_pod,
                                    start_container)
from tests.waiting import wait_until

GB300 = [f"GPU {i}: NVIDIA GB300 NVL (UUID: GPU-b300b300-0000-0000-0000-00000000000{i})" for i in range(8)]
#: Every command of `mokka --help`, and a phrase only its own --help prints.
COMMANDS = {
    "node-agent": "--host-root", "nri-plugin": "--socket-path", "render-cdi": "CDI specs",
    "profiles": "List the built-in GPU profiles", "compile": "the mock NVML library reads",
    "nvidia-smi": "NVIDIA System Management Interface", "check-fabric": "NVLink fabric state",
    "mock-ib": "mock HCAs", "fabricmanager": "nv-fabricmanager", "ctl": "raise an Xid on one GPU",
    "exec": "private mount namespace", "env": "Print the variables that aim host tools",
    "status": "Show the node staged under --host-root",
    "kwok-nodes": "Node objects for KWOK",
}
LINKS = {"nri-plugin": "Usage: nri-plugin", "nvidia-smi": "NVIDIA System Management Interface",
         "check-fabric": "Usage: check-fabric", "mock-ib": "Usage: mock-ib",
         "fabricmanager": "Stand in for nv-fabricmanager", "ctl": "raise an Xid on one GPU"}


@pytest.fixture(scope="module")
def image_containerd(runtime, cri_api, container_support, mokka_image, tmp_path_factory):
    instance = Containerd(runtime, tmp_path_factory.mktemp("image-containerd"))
    try:
        instance.import_image(mokka_image.path, mokka_image.ref)
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def cri(image_containerd):
    client = image_containerd.client()
    yield client
    image_containerd.cleanup_pods()


def run(cri, ref, *, command=("sleep", "3600"), args=(), user=None, privileged=False,
        mounts=()) -> str:
    """Start a container of the image with a read-only root filesystem; its id."""
    name = f"img-{uuid.uuid4().hex[:8]}"
    pod_id, pod_config = run_pod(cri, name, privileged=privileged)
    pb = cri.pb
    security = pb.LinuxContainerSecurityContext(
        privileged=privileged, readonly_rootfs=True,
        namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD))
    if user is not None:
        security.run_as_user.value = user
    config = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name, attempt=0), image=pb.ImageSpec(image=ref),
        command=list(command), args=list(args), log_path=f"{name}.log",
        mounts=[pb.Mount(**m) for m in mounts],
        linux=pb.LinuxContainerConfig(security_context=security))
    cid = cri.call("CreateContainer", pod_sandbox_id=pod_id, config=config,
                   sandbox_config=pod_config).container_id
    start_container(cri, cid)
    return cid


def ok(cri, cid, cmd, timeout=60) -> str:
    result = exec_sync(cri, cid, cmd, timeout=timeout)
    assert result.exit_code == 0, (cmd, result)
    return result.stdout


def test_the_agent_stages_a_gb300_node_that_nvidias_nvidia_smi_lists(cri, mokka_image, tmp_path):
    host, scratch = tmp_path / "root", tmp_path / "tmp"
    host.mkdir()
    scratch.mkdir()
    # The root filesystem is read-only: the agent's scratch files (private copies it
    # patches) need a writable /tmp, as the chart's emptyDir gives it.
    cid = run(cri, mokka_image.ref, privileged=True,
              mounts=[{"container_path": "/tmp", "host_path": str(scratch)},
                      {"container_path": "/tmp/root", "host_path": str(host)}])
    ok(cri, cid, ["mokka", "node-agent", "--once", "--host-root", "/tmp/root", "--health-addr", ""], timeout=120)
    smi = "/tmp/root/var/lib/nvml-mock/driver/usr/bin/nvidia-smi"
    # Staged from MOKKA_AGENT_NVIDIA_SMI: NVIDIA's binary, not the Python shim.
    assert (host / smi.removeprefix("/tmp/root/")).read_bytes()[:4] == b"\x7fELF"
    assert ok(cri, cid, [smi, "-L"]).splitlines() == GB300
    # ...and the image's IB tools, from MOKKA_AGENT_IB_TOOLS=/.
    assert (host / "var/lib/nvml-mock/driver/usr/bin/ibstat").read_bytes()[:4] == b"\x7fELF"
    ok(cri, cid, ["mokka", "node-agent", "--teardown", "--host-root", "/tmp/root"], timeout=120)


def test_the_default_entrypoint_is_mokka(cri, mokka_image, image_containerd):
    cid = run(cri, mokka_image.ref, command=(), args=("profiles",))
    wait_until(lambda: container_state(cri, cid) == "CONTAINER_EXITED", "the container to exit",
               timeout=60)
    status = container_status(cri, cid).status
    assert status.exit_code == 0, status
    with open(status.log_path) as f:
        assert "gb300" in f.read()


def test_every_command_answers_help_on_a_read_only_root(cri, mokka_image):
    cid = run(cri, mokka_image.ref)
    listed = ok(cri, cid, ["mokka", "--help"])
    for command, phrase in COMMANDS.items():
        assert f"  {command} " in listed
        assert phrase in ok(cri, cid, ["mokka", command, "--help"]), command


def test_every_link_dispatches_to_its_command(cri, mokka_image):
    cid = run(cri, mokka_image.ref)
    for link, phrase in LINKS.items():
        assert ok(cri, cid, ["readlink", f"/usr/local/bin/{link}"]).strip() == "mokka"
        assert phrase in ok(cri, cid, [f"/usr/local/bin/{link}", "--help"]), link
    assert "Usage: nri-plugin" in ok(cri, cid, ["nri-plugin", "--help"])


def test_the_nonroot_user_runs_mokka(cri, mokka_image):
    cid = run(cri, mokka_image.ref, user=65532)
    assert ok(cri, cid, ["id", "-u"]).strip() == "65532"
    assert ok(cri, cid, ["id", "-un"]).strip() == "nonroot"
    assert "gb300" in ok(cri, cid, ["mokka", "profiles"])
    assert "kind: nvidia.com/gpu" in ok(cri, cid, ["mokka", "render-cdi"])


def test_the_tools_the_agent_runs_start(cri, mokka_image):
    cid = run(cri, mokka_image.ref)
    assert ok(cri, cid, ["systemctl", "--version"]).startswith("systemd 252 ")
    assert ok(cri, cid, ["patchelf", "--version"]).startswith("patchelf ")
    assert exec_sync(cri, cid, ["ibstat", "-V"]).stderr.startswith("ibstat BUILD VERSION: 44.0")
