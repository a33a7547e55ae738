"""A static Go program in a real containerd 1.7 container created through the real NRI
plugin reads the node's PCI tree, modules and driver version from /sys and /proc
itself, as gpu-feature-discovery, the device plugin and mig-parted do (no LD_PRELOAD
reaches it): exactly the GPUs the container may see (its /dev/nvidiaN), whatever
selected them (a device plugin's allocation, the devices annotation, CDI device
injection); nothing in a container that selected nothing; nothing on the host after
the agent's teardown.

The reader is tests/goreader (built once per session), laid into a busybox image.
A dynamically linked reader, this host's lspci in another, sees the same: the
container gets no libmockfs that would show it the node's whole PCI tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from mokka.core import names
from mokka.core.overlay import Overlay
from tests import goreader
from tests.integration.busybox import build_busybox_image
from tests.integration.nodes import agent_argv, mokka_env, native_node
from tests.integration.nriplugin import PluginProcess, make
from tests.integration.pods import (create_container, exec_sync, remove_pod, run_pod,
                                    start_container)

READER_IMAGE = "docker.io/library/mokka-goreader:test"
READER = f"/usr/local/bin/{goreader.NAME}"


@pytest.fixture(scope="module")
def sys_node(tmp_path_factory):
    with native_node(tmp_path_factory, "sysview", "t4") as staged:
        yield staged


@pytest.fixture(scope="module")
def reader_image(go_reader, tmp_path_factory) -> str:
    """A busybox image with the Go reader at READER: its OCI tar."""
    tree = tmp_path_factory.mktemp("reader-root")
    os.makedirs(tree / "usr/local/bin")
    with open(go_reader, "rb") as src, open(tree / "usr/local/bin" / goreader.NAME, "wb") as dst:
        dst.write(src.read())
    os.chmod(tree / "usr/local/bin" / goreader.NAME, 0o755)
    return str(build_busybox_image(tmp_path_factory.mktemp("reader-image") / "image.tar",
                                   ref=READER_IMAGE, extra_root=str(tree)))


@pytest.fixture
def start_plugin(containerd, zipapp, sys_node, reader_image):
    containerd.import_image(reader_image, READER_IMAGE)
    started = []

    def start(*extra: str) -> PluginProcess:
        root, overlay = sys_node
        plugin = PluginProcess(zipapp, containerd.nri_socket, overlay, root, *extra).start()
        started.append(plugin)
        return plugin

    yield start
    for plugin in started:
        plugin.stop()


def read_node(cri, name: str, annotations=None, **kwargs) -> dict:
    """Run the reader in a new container of a new pod; its report."""
    pod_id, cid, _ = make(cri, name, annotations, image=READER_IMAGE, **kwargs)
    start_container(cri, cid)
    done = exec_sync(cri, cid, [READER], timeout=20)
    remove_pod(cri, pod_id)
    assert done.exit_code == 0, done
    return goreader.parse(done.stdout)


def test_the_devices_annotation_shows_every_gpu_and_the_kernels_own_entries(containerd, start_plugin):
    start_plugin()
    report = read_node(containerd.client(), "annotated", {names.ANNOTATION_DEVICES: "true"})
    goreader.sees_gpus(report, range(4))
    # Added to the kernel's tree, not instead of it (where a staged bridge stands at one of
    # the host's addresses, the staged one is read).
    assert goreader.kernel_entries(report, range(4)) == goreader.host_pci_entries_beside(range(4))


def test_a_device_plugin_allocation_of_one_gpu_shows_that_gpu_only(containerd, start_plugin, sys_node):
    _, overlay = sys_node
    start_plugin()
    # What the device plugin with --pass-device-specs asks for: one node, its cgroup rule.
    report = read_node(containerd.client(), "allocated",
                       devices=[{"host_path": overlay.gpu_node(1), "container_path": "/dev/nvidia1",
                                 "permissions": "rw"}])
    goreader.sees_gpus(report, [1])
    assert [d["name"] for d in goreader.nvidia_devices(report)] == ["0000:86:00.0"]


# --- A dynamically linked reader: the host's lspci and its libraries in a busybox image -------
LSPCI_IMAGE = "docker.io/library/mokka-lspci:test"
LSPCI = shutil.which("lspci")


def libraries(program: str) -> list[str]:
    """The shared objects ``program`` loads (ld.so among them), as ldd resolves them here."""
    done = subprocess.run(["ldd", program], capture_output=True, text=True, check=True)
    return re.findall(r"(/\S+) \(0x", done.stdout)


@pytest.fixture(scope="module")
def lspci_image(tmp_path_factory, sys_node) -> str:
    """A busybox image with this host's lspci (dynamically linked) and, at their paths, the
    libraries it and the staged preload shims load."""
    if LSPCI is None:
        pytest.skip("no lspci here (pciutils): it is what this test runs")
    _, overlay = sys_node
    shims = [os.path.join(overlay.preload_lib, name) for name in sorted(os.listdir(overlay.preload_lib))]
    tree = tmp_path_factory.mktemp("lspci-root")
    for path in dict.fromkeys([LSPCI, *libraries(LSPCI), *(lib for shim in shims for lib in libraries(shim))]):
        target = tree / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        os.chmod(target, 0o755)
    return str(build_busybox_image(tmp_path_factory.mktemp("lspci-image") / "image.tar",
                                   ref=LSPCI_IMAGE, extra_root=str(tree)))


@pytest.mark.parametrize("mode", ["raw", "cdi"])
def test_lspci_in_a_container_allocated_one_gpu_lists_that_gpu_only(containerd, zipapp, sys_node,
                                                                   lspci_image, mode):
    """lspci goes through libc, where a preload reaches: it reads /sys as the hook gives it."""
    root, overlay = sys_node
    containerd.import_image(lspci_image, LSPCI_IMAGE)
    plugin = PluginProcess(zipapp, containerd.nri_socket, overlay, root,
                           "--device-injection-mode", mode).start()
    try:
        cri = containerd.client()
        pod_id, cid, _ = make(cri, "lspci", image=LSPCI_IMAGE,
                              devices=[{"host_path": overlay.gpu_node(2), "container_path": "/dev/nvidia2",
                                        "permissions": "rw"}])
        start_container(cri, cid)
        done = exec_sync(cri, cid, ["sh", "-c", "lspci -n; echo \"$LD_PRELOAD\" \"${MOCK_PCI_ROOT-unset}\""],
                         timeout=20)
        remove_pod(cri, pod_id)
    finally:
        plugin.stop()
    assert done.exit_code == 0, done
    lines = done.stdout.splitlines()
    assert [line for line in lines if " 10de:" in line] == ["af:00.0 0302: 10de:1eb8"], done
    assert lines[-1] == ("/opt/nvml-mock/driver/usr/local/lib/libibmockumad.so.1:"
                         "/opt/nvml-mock/driver/usr/local/lib/libibmockverbs.so.1:"
                         "/opt/nvml-mock/driver/usr/local/lib/libibmocksys.so.1 unset")


def test_cdi_device_injection_shows_every_gpu(containerd, start_plugin):
    start_plugin("--device-injection-mode", "cdi")
    report = read_node(containerd.client(), "cdi", {names.ANNOTATION_DEVICES: "true"})
    goreader.sees_gpus(report, range(4))


def test_a_gpu_containerd_resolves_from_the_cdi_specs_shows_that_gpu(containerd_factory, sys_node,
                                                                    reader_image):
    root, _ = sys_node
    spec_dir = os.path.join(root, names.CDI_SPEC_DIR.lstrip("/"))
    containerd = containerd_factory(enable_cdi=True, cdi_spec_dirs=[spec_dir])
    containerd.import_image(reader_image, READER_IMAGE)
    cri = containerd.client()
    pod_id, pod_config = run_pod(cri, "cdi-resolved")
    cid = create_container(cri, pod_id, pod_config, "app", None, image=READER_IMAGE,
                           cdi_devices=[f"{names.CDI_KIND_GPU}=1"])
    start_container(cri, cid)
    done = exec_sync(cri, cid, [READER], timeout=20)
    remove_pod(cri, pod_id)
    assert done.exit_code == 0, done
    goreader.sees_gpus(goreader.parse(done.stdout), [1])


def test_a_container_that_selected_nothing_sees_none_of_it(containerd, start_plugin):
    start_plugin()
    cri = containerd.client()
    report = read_node(cri, "plain")
    goreader.sees_no_gpu(report)
    assert goreader.kernel_entries(report) == goreader.host_pci_entries()
    assert report["proc_driver_nvidia_version"] is None


def host_mounts(*roots: str) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return sorted(p for p in points if p.startswith(tuple(str(r) + "/" for r in roots)))


def test_the_agents_teardown_leaves_nothing_on_the_host(containerd, zipapp, reader_image, tmp_path):
    containerd.import_image(reader_image, READER_IMAGE)
    root = str(tmp_path / "node")
    agent = agent_argv(root, "t4")
    done = subprocess.run(agent + ["--once"], env=mokka_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    overlay_root = os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/"))
    plugin = PluginProcess(zipapp, containerd.nri_socket, Overlay(overlay_root), root).start()
    try:
        report = read_node(containerd.client(), "torn", {names.ANNOTATION_DEVICES: "true"})
        goreader.sees_gpus(report, range(4))
    finally:
        plugin.stop()
    done = subprocess.run(agent + ["--teardown"], env=mokka_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert host_mounts(root) == []
    left = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs] if os.path.isdir(root) else []
    assert left == []
    assert not os.path.exists(overlay_root)


# --- InfiniBand: an h100 GPU container that selects it reads its HCAs' PCI functions ---------
# mlx5_0 is 0000:1c:00.0 beside GPU 0 at 0000:1a:00.0 (ConnectX-7); the image's busybox is
# static, so it reads the kernel's /sys with the hook's view, as a Go program does.
HCA_READ = ("echo \"$MOCK_IB\"; cat /sys/bus/pci/devices/0000:1c:00.0/class "
            "/sys/bus/pci/devices/0000:1c:00.0/vendor /sys/bus/pci/devices/0000:1c:00.0/device "
            "/sys/bus/pci/devices/0000:1a:00.0/class 2>&1; ls /sys/bus/pci/drivers/mlx5_core 2>&1")


@pytest.fixture(scope="module")
def h100_node(tmp_path_factory):
    with native_node(tmp_path_factory, "sysview-h100", "h100") as staged:
        yield staged


@pytest.mark.parametrize("annotations, expected", [
    ({names.ANNOTATION_DEVICES: "true", names.ANNOTATION_INFINIBAND: "true"},
     ["full", "0x020700", "0x15b3", "0x1021", "0x030200",
      "0000:1c:00.0", "0000:1d:00.0", "0000:4c:00.0", "0000:4d:00.0",
      "0000:8c:00.0", "0000:8d:00.0", "0000:cc:00.0", "0000:cd:00.0"]),
    ({names.ANNOTATION_DEVICES: "true"},
     ["off", "cat: can't open '/sys/bus/pci/devices/0000:1c:00.0/class': No such file or directory",
      "cat: can't open '/sys/bus/pci/devices/0000:1c:00.0/vendor': No such file or directory",
      "cat: can't open '/sys/bus/pci/devices/0000:1c:00.0/device': No such file or directory",
      "0x030200", "ls: /sys/bus/pci/drivers/mlx5_core: No such file or directory"]),
], ids=["infiniband", "gpu only"])
def test_an_infiniband_gpu_container_reads_its_hcas_class_beside_its_gpus(
        containerd, zipapp, h100_node, reader_image, annotations, expected):
    root, overlay = h100_node
    containerd.import_image(reader_image, READER_IMAGE)
    plugin = PluginProcess(zipapp, containerd.nri_socket, overlay, root).start()
    try:
        cri = containerd.client()
        pod_id, cid, _ = make(cri, "hca", annotations, image=READER_IMAGE)
        start_container(cri, cid)
        done = exec_sync(cri, cid, ["sh", "-c", HCA_READ], timeout=20)
        remove_pod(cri, pod_id)
    finally:
        plugin.stop()
    assert done.stdout.splitlines() == expected, done
