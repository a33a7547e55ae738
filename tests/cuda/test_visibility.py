"""Which devices the mock CUDA driver shows, in which order: NVML's GPUs
(MOCK_NVML_VISIBLE_DEVICES, the /dev/nvidiaN present), narrowed by
CUDA_VISIBLE_DEVICES and ordered by CUDA_DEVICE_ORDER, as the programming guide
gives the rules."""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from tests.cuda.conftest import node, run_cuda

A = "GPU-aaaa0000-0000-0000-0000-000000000000"
B = "GPU-bbbb0000-0000-0000-0000-000000000001"
C = "GPU-cccc0000-0000-0000-0000-000000000002"
CD = "GPU-cd000000-0000-0000-0000-000000000003"

#: Four GPUs in NVML's order A B C CD; B is the one faster board; PCI order is B CD C A.
MIXED = f"""version: "1.0"
system: {{driver_version: 550.163.01, cuda_version: "12.4", cuda_version_major: 12, cuda_version_minor: 4}}
device_defaults:
  name: NVIDIA T4
  architecture: turing
  compute_capability: {{major: 7, minor: 5}}
  num_gpu_cores: 2560
  memory: {{total_bytes: 17179869184}}
  clocks: {{sm_max: 1590, memory_max: 5001}}
devices:
  - {{index: 0, uuid: {A}, pci: {{bus_id: "0000:40:00.0"}}}}
  - index: 1
    uuid: {B}
    pci: {{bus_id: "0000:10:00.0"}}
    name: NVIDIA H100 80GB HBM3
    architecture: hopper
    compute_capability: {{major: 9, minor: 0}}
    num_gpu_cores: 16896
    clocks: {{sm_max: 1980}}
  - {{index: 2, uuid: {C}, pci: {{bus_id: "0000:30:00.0"}}}}
  - {{index: 3, uuid: {CD}, pci: {{bus_id: "0000:20:00.0"}}}}
"""

NO_DEVICE = 100


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    path = tmp_path_factory.mktemp("mixed-profile") / "mixed.yaml"
    path.write_text(MIXED)
    return str(path)


def uuids_seen(cuda_lib, profile, root, **env) -> list[str] | int:
    seen = run_cuda(cuda_lib, node(profile, root, **env), "devices")
    if seen["init"] != 0:
        return seen["init"]
    return ["GPU-{}-{}-{}-{}-{}".format(u[:8], u[8:12], u[12:16], u[16:20], u[20:])
            for u in (d["uuid"] for d in seen["devices"])]


CASES = [
    pytest.param({}, [B, A, C, CD], id="unset: every device, the fastest first, the rest in NVML's order"),
    pytest.param({names.ENV_CUDA_DEVICE_ORDER: "PCI_BUS_ID"}, [B, CD, C, A], id="PCI_BUS_ID: bus order"),
    pytest.param({names.ENV_CUDA_DEVICE_ORDER: "FASTEST_FIRST"}, [B, A, C, CD], id="FASTEST_FIRST as unset"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "1"}, [A], id="an index is into CUDA's order"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "1", names.ENV_CUDA_DEVICE_ORDER: "PCI_BUS_ID"}, [CD],
                 id="the index follows CUDA_DEVICE_ORDER"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "3,0"}, [CD, B], id="indices are kept in list order"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "0,2,-1,1"}, [B, C], id="the list stops at the first invalid entry"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "2,9,0"}, [C], id="an index past the last device stops it"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "2,2,0"}, [C], id="a device listed twice stops it"),
    pytest.param({"CUDA_VISIBLE_DEVICES": " 3 , 1"}, [CD, A], id="blanks around entries are ignored"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "GPU-cc"}, [C], id="a unique UUID prefix"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "gpu-CD000000"}, [CD], id="a UUID prefix in any case"),
    pytest.param({"CUDA_VISIBLE_DEVICES": f"{A},GPU-bbbb"}, [A, B], id="UUIDs in list order"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "0,GPU-c,1"}, [B], id="an ambiguous prefix stops the list"),
    pytest.param({"CUDA_VISIBLE_DEVICES": f"MIG-{A[4:]}"}, NO_DEVICE, id="no MIG device exists"),
    pytest.param({"CUDA_VISIBLE_DEVICES": ""}, NO_DEVICE, id="the empty string: no device"),
    pytest.param({names.ENV_NVML_VISIBLE_DEVICES: "none"}, NO_DEVICE, id="NVML sees none: CUDA none"),
    pytest.param({names.ENV_NVML_VISIBLE_DEVICES: "2,3", "CUDA_VISIBLE_DEVICES": "1"}, [CD],
                 id="CUDA narrows what NVML lets the process see"),
]


@pytest.mark.parametrize("env, want", CASES)
def test_visible_devices_and_their_order(cuda_lib, mixed, tmp_path, env, want):
    assert uuids_seen(cuda_lib, mixed, tmp_path, **env) == want


def test_the_device_nodes_present_decide_as_nvml_decides(cuda_lib, mixed, tmp_path):
    staged = node(mixed, tmp_path)
    open(os.path.join(staged[names.ENV_DEV_ROOT], "dev", names.gpu_node_name(2)), "w").close()
    seen = run_cuda(cuda_lib, staged, "devices")
    assert [d["name"] for d in seen["devices"]] == ["NVIDIA T4"] and seen["count"] == 1
    assert seen["devices"][0]["uuid"] == C[4:].replace("-", "")
