"""The CDI specs the agent stages, resolved by a real containerd with enable_cdi = true."""

from __future__ import annotations

import os

import pytest
import yaml

from mokka.core import names
from tests.integration.pods import (container_spec, create_container, exec_sync, run_pod,
                                    start_container)


@pytest.fixture
def cdi_containerd(containerd_factory, node):
    root, _ = node
    spec_dir = os.path.join(root, names.CDI_SPEC_DIR.lstrip("/"))
    return containerd_factory(enable_cdi=True, cdi_spec_dirs=[spec_dir]), spec_dir


def devices(spec):
    return sorted(d["path"] for d in (spec.get("linux") or {}).get("devices") or [])


def gpu_uuid(spec_dir, index):
    with open(os.path.join(spec_dir, names.CDI_SPEC_GPU_FILE)) as f:
        spec = yaml.safe_load(f)
    names_ = [d["name"] for d in spec["devices"]]
    return [n for n in names_ if n.startswith("GPU-")][index]


#: As NVIDIA's toolkit specs have them: nvidia-modeset is among the nodes every device shares.
CONTROL = ["/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"]


@pytest.mark.parametrize("device,expect", [
    (f"{names.CDI_KIND_GPU}=0", ["/dev/nvidia0"]),
    (f"{names.CDI_KIND_GPU}=3", ["/dev/nvidia3"]),
    (f"{names.CDI_KIND_GPU}=uuid:2", ["/dev/nvidia2"]),
    (f"{names.CDI_KIND_GPU}=all", [f"/dev/nvidia{i}" for i in range(4)]),
    (f"{names.CDI_KIND_MOCK}=1", ["/dev/nvidia1"]),
    (f"{names.CDI_KIND_MOCK}=all", [f"/dev/nvidia{i}" for i in range(4)]),
    (f"{names.CDI_KIND_MANAGEMENT}=all", [f"/dev/nvidia{i}" for i in range(4)]),
], ids=["toolkit index 0", "toolkit index 3", "toolkit by UUID", "toolkit all",
        "mock index 1", "mock all", "management all"])
def test_containerd_resolves_each_device_name(cdi_containerd, device, expect):
    containerd, spec_dir = cdi_containerd
    if "uuid:" in device:
        kind, _, ref = device.partition("=")
        device = f"{kind}={gpu_uuid(spec_dir, int(ref.split(':')[1]))}"
    cri = containerd.client()
    pod_id, pod_config = run_pod(cri, "cdi", "default")
    cid = create_container(cri, pod_id, pod_config, "app", None, cdi_devices=[device])
    spec = container_spec(cri, cid)
    gpus = [d for d in devices(spec) if d.startswith("/dev/nvidia") and d[11:].isdigit()]
    assert gpus == sorted(expect)
    if device.startswith(names.CDI_KIND_GPU) or device.endswith("=all") and "mock" in device:
        assert set(CONTROL) <= set(devices(spec))


def test_toolkit_spec_gives_a_working_container(cdi_containerd):
    containerd, _ = cdi_containerd
    cri = containerd.client()
    pod_id, pod_config = run_pod(cri, "cdi-run", "default")
    cid = create_container(cri, pod_id, pod_config, "app", None,
                              cdi_devices=[f"{names.CDI_KIND_GPU}=0"])
    start_container(cri, cid)
    result = exec_sync(cri, cid, ["sh", "-c",
                                     "test -c /dev/nvidia0 && test -c /dev/nvidiactl && "
                                     f"head -c 7 {names.CDI_CONFIG_MOUNT}/{names.PROFILE_FILE} && "
                                     f"test -x {names.CDI_NVIDIA_SMI_MOUNT} && echo $MOCK_NVML_CONFIG"])
    assert result.exit_code == 0, result
    assert f"{names.CDI_CONFIG_MOUNT}/{names.PROFILE_FILE}" in result.stdout
