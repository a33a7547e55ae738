"""Which PCI tree a GPU container's dynamically linked readers see.

Where the proc hook is staged, it gives the container's /sys the PCI tree of its own GPUs
(and, with InfiniBand selected, its HCAs), for every reader. libmockfs with MOCK_PCI_ROOT
would show lspci or Python the node's whole staged tree instead, so such a container gets
neither; only a GPU container no staged hook serves keeps them (the node's tree is then the
only one there is)."""

from __future__ import annotations

import pytest

from mokka.nri.inject import Container, adjust
from tests.nri.inject.builders import (MANAGEMENT_ALL, allocated, config, env_of, full_view, plain,
                                       pod, pod_with)

LIB = "/opt/nvml-mock/driver/usr/local/lib"
IB_SHIMS = f"{LIB}/libibmockumad.so.1:{LIB}/libibmockverbs.so.1:{LIB}/libibmocksys.so.1"
HOOKED = full_view(proc_hook_staged=True)
HOOK_PATH = "/var/lib/nvml-mock/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook"
DEVICES = "nvml-mock.nvidia.com/devices"
INFINIBAND = "nvml-mock.nvidia.com/infiniband"


def cdi_allocated() -> Container:
    """A container the device plugin gave GPU 1 by CDI name (cdi-cri strategy)."""
    return plain(cdi_devices=("k8s.device-plugin.nvidia.com/gpu=1",))


GPU_CASES = [
    # id, config, pod, container
    ("raw allocation", config(), pod(), allocated(1)),
    ("CDI allocation", config(), pod(), cdi_allocated()),
    ("devices annotation, raw mode", config(), pod(DEVICES), plain()),
    ("devices annotation, cdi mode", config(device_injection_mode="cdi"), pod(DEVICES), plain()),
    ("allocation with InfiniBand", config(), pod(INFINIBAND), allocated(1)),
]


@pytest.mark.parametrize("cfg, the_pod, container", [c[1:] for c in GPU_CASES], ids=[c[0] for c in GPU_CASES])
def test_a_gpu_container_the_hook_serves_gets_no_libmockfs_nor_its_root(cfg, the_pod, container):
    decision = adjust(cfg, the_pod, container, HOOKED)
    env = env_of(decision)
    assert env["LD_PRELOAD"] == IB_SHIMS
    assert "MOCK_PCI_ROOT" not in env
    assert env["MOCK_NVML_CONFIG"] == "/opt/nvml-mock/driver/config/config.yaml"
    assert [hook.path for hook in decision.adjustment.hooks] == [HOOK_PATH]


@pytest.mark.parametrize("cfg, the_pod, container", [c[1:] for c in GPU_CASES], ids=[c[0] for c in GPU_CASES])
def test_without_a_staged_hook_libmockfs_shows_the_nodes_tree(cfg, the_pod, container):
    decision = adjust(cfg, the_pod, container, full_view(proc_hook_staged=False))
    env = env_of(decision)
    assert env["LD_PRELOAD"] == f"{IB_SHIMS}:{LIB}/libmockfs.so.1"
    assert env["MOCK_PCI_ROOT"] == "/opt/nvml-mock"
    assert decision.adjustment.hooks == ()


@pytest.mark.parametrize("hooked", [True, False], ids=["hook staged", "no hook"])
def test_infiniband_alone_preloads_no_libmockfs(hooked):
    env = env_of(adjust(config(), pod(INFINIBAND), plain(), full_view(proc_hook_staged=hooked)))
    assert env["LD_PRELOAD"] == IB_SHIMS
    assert "MOCK_PCI_ROOT" not in env


def test_the_management_path_gets_no_preload_nor_root():
    cfg = config(toolkit_cdi_annotations=True, cdi_annotation_namespaces=frozenset({"gpu-operator"}))
    decision = adjust(cfg, pod_with({"nvidia.cdi.k8s.io/pod": MANAGEMENT_ALL}, "gpu-operator"), plain(),
                      full_view(proc_hook_staged=True, runtime_accepts_cdi=True))
    assert decision.adjustment.cdi_devices == ("management.nvidia.com/gpu=all",)
    assert decision.adjustment.env == ()


def test_a_containers_own_preload_and_root_stay_as_authored():
    own = (f"LD_PRELOAD=/usr/lib/libjemalloc.so:{LIB}/libmockfs.so.1", "MOCK_PCI_ROOT=/mine")
    env = env_of(adjust(config(), pod(), allocated(1, env=own), HOOKED))
    assert env["LD_PRELOAD"] == f"/usr/lib/libjemalloc.so:{LIB}/libmockfs.so.1:{IB_SHIMS}"
    assert "MOCK_PCI_ROOT" not in env
