"""The proc hook in a real containerd 1.7.24 (NRI 0.6.1) and runc: a GPU-selected
container sees the driver's proc files the node staged, from inside its own mount
namespace, with nothing in its pod spec asking; an unselected one sees its kernel's
/proc/driver as it was; nothing is mounted on the host, during or after.

The node is staged by the real agent with this machine's native build (the hook is a
static executable of native/hooks/), the real nri-plugin process adds the hook.
"""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from tests.integration.nodes import native_node
from tests.integration.nriplugin import make, plugin_for
from tests.integration.pods import exec_sync, remove_pod, start_container

MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"
MIG_CONFIG = "/proc/driver/nvidia/capabilities/mig/config"
MIG_MONITOR = "/proc/driver/nvidia/capabilities/mig/monitor"
DRIVER_VERSION = "/proc/driver/nvidia/version"
#: The char devices a t4 node's driver registers, as /proc/devices prints them.
T4_DEVICES = ("195 nvidia\n195 nvidia-modeset\n195 nvidiactl\n234 nvidia-nvlink\n236 nvidia-caps\n"
              "510 nvidia-uvm\n511 nvidia-nvswitch\n")
BLOCK_SECTION = "\nBlock devices:\n"


@pytest.fixture(scope="module")
def hook_node(tmp_path_factory):
    with native_node(tmp_path_factory, "prochook", "t4") as staged:
        yield staged


@pytest.fixture
def plugin(containerd, zipapp, hook_node):
    with plugin_for(containerd, zipapp, hook_node) as started:
        yield started


def host_mounts(*roots: str) -> list[str]:
    """The host's mount points under ``roots`` (other engineers' tests mount elsewhere)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return sorted(p for p in points if p.startswith(tuple(str(r) + "/" for r in roots)))


def host_proc_devices() -> str:
    with open("/proc/devices") as f:
        return f.read()


def staged(overlay, rel: str) -> str:
    with open(os.path.join(overlay.join(names.DRIVER_PROC_ROOT), rel)) as f:
        return f.read()


def test_a_gpu_container_reads_the_staged_driver_proc_files(containerd, plugin, hook_node):
    _, overlay = hook_node
    cri = containerd.client()
    roots = (containerd.workdir, containerd.sockdir, overlay.root)
    before = host_mounts(*roots)
    pod_id, cid, spec = make(cri, "hooked", {names.ANNOTATION_DEVICES: "true"})
    (hook,) = spec["hooks"]["createContainer"]
    assert hook["path"] == overlay.join("driver/usr/libexec/nvml-mock/nvml-mock-proc-hook")
    assert hook["args"] == ["nvml-mock-proc-hook", overlay.root]
    start_container(cri, cid)

    minors = exec_sync(cri, cid, ["cat", MIG_MINORS])
    assert minors.exit_code == 0, minors
    assert minors.stdout == staged(overlay, "nvidia-caps/mig-minors")
    lines = minors.stdout.splitlines()
    assert lines[:4] == ["config 1", "monitor 2", "gpu0/gi0/access 3", "gpu0/gi0/ci0/access 4"]
    assert len(lines) == 2 + 32 * 15 * 9
    config = exec_sync(cri, cid, ["cat", MIG_CONFIG])
    assert config.stdout == "DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n", config
    monitor = exec_sync(cri, cid, ["cat", MIG_MONITOR])
    assert monitor.stdout == "DeviceFileMinor: 2\nDeviceFileMode: 292\nDeviceFileModify: 1\n", monitor
    version = exec_sync(cri, cid, ["cat", DRIVER_VERSION])
    assert version.stdout == staged(overlay, "nvidia/version") and version.stdout.startswith("NVRM"), version
    # Read-only, as the driver's proc files are.
    assert exec_sync(cri, cid, ["sh", "-c", f"echo x > {MIG_MONITOR}"]).exit_code != 0
    assert exec_sync(cri, cid, ["mkdir", "/proc/driver/x"]).exit_code != 0
    # The rest of the container's /proc is its own.
    assert exec_sync(cri, cid, ["cat", "/proc/self/status"]).exit_code == 0
    # /proc/modules: this kernel has no module support and no such file; the hook adds
    # none (it never makes a file the kernel does not have), so the container has none
    # either. On a kernel with one, the container reads it with the driver's lines.
    if os.path.exists("/proc/modules"):
        modules = exec_sync(cri, cid, ["cat", "/proc/modules"])
        assert "\nnvidia " in "\n" + modules.stdout, modules
    else:
        assert exec_sync(cri, cid, ["test", "-e", "/proc/modules"]).exit_code != 0
    # /proc/devices: the kernel's, its character devices closed by the driver's (the majors
    # the GPU Operator's validator reads), its block devices as they were.
    devices = exec_sync(cri, cid, ["cat", "/proc/devices"])
    chars, _, blocks = devices.stdout.partition(BLOCK_SECTION)
    host_chars, _, host_blocks = host_proc_devices().partition(BLOCK_SECTION)
    assert chars == host_chars + T4_DEVICES, devices
    assert blocks == host_blocks and blocks, devices

    # Nothing reached the host's mount table, while the container runs or after it goes.
    during = host_mounts(*roots)
    assert not [p for p in during if "/proc/" in p], during
    remove_pod(cri, pod_id)
    assert host_mounts(*roots) == before


def test_an_unselected_container_sees_its_kernels_proc_driver(containerd, plugin):
    cri = containerd.client()
    _, cid, spec = make(cri, "plain")
    assert not (spec.get("hooks") or {}).get("createContainer")
    start_container(cri, cid)
    seen = exec_sync(cri, cid, ["ls", "-A", "/proc/driver"])
    assert seen.exit_code == 0, seen
    assert sorted(seen.stdout.split()) == sorted(os.listdir("/proc/driver"))
    assert "nvidia-caps" not in seen.stdout
    assert exec_sync(cri, cid, ["test", "-e", MIG_MINORS]).exit_code != 0
    devices = exec_sync(cri, cid, ["cat", "/proc/devices"])
    assert devices.exit_code == 0 and devices.stdout == host_proc_devices(), devices
    assert "nvidia" not in devices.stdout
