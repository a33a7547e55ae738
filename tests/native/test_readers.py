"""The readers DCGM asks of a GPU beyond the common ones (issue 36), read through pynvml on
staged h100 and a100 nodes: PCIe speed and bus, performance states and their clock ranges,
thermal settings, the dynamic P-state domains, detailed ECC counts, the InfoROM, NVLink error
counters, and the driver's sample buffer over a window. Readers a real board of the profile
refuses stay NOT_SUPPORTED, each with the reason."""

from __future__ import annotations

import pytest

from mokka.core import names
from tests.native.conftest import run_probe
from tests.native.mig_nodes import board
from tests.native.staged import nvml_build, staged_node  # noqa: F401 (fixtures)

NOT_SUPPORTED = ["err", 3]
INVALID_ARGUMENT = ["err", 2]
NOT_FOUND = ["err", 6]
#: tests/corpus/dynamic_cases.PINNED_CLOCK, the second every staged process reads, in µs.
NOW_US = 1700000000 * 1000000

#: Per profile: what each reader answers for GPU 0, from the built-in profile.
EXPECTED = {
    "h100": {
        "PcieSpeed": 32000,                     # Gen5: 32 GT/s a lane
        "PcieLinkMaxSpeed": 5,                  # NVML_PCIE_LINK_MAX_SPEED_32000MBPS
        # graphics and SM from the lowest supported clock to the maximum; memory: one clock
        "MinMaxClockOfPState": {"graphics": [345, 1980], "sm": [345, 1980], "memory": [2619, 2619],
                                "video": NOT_SUPPORTED},
        # the GPU's own sensor: controller GPU_INTERNAL, 0 C to the shutdown threshold, target GPU
        "ThermalSettings": {"count": 1, "sensors": [[1, 0, 92, 34, 1]]},
        "InforomConfigurationChecksum": 3942094224,
    },
    "a100": {
        "PcieSpeed": 16000,                     # Gen4
        "PcieLinkMaxSpeed": 4,                  # NVML_PCIE_LINK_MAX_SPEED_16000MBPS
        "MinMaxClockOfPState": {"graphics": [210, 1410], "sm": [210, 1410], "memory": [1215, 1215],
                                "video": NOT_SUPPORTED},
        # and the HBM's: 0 C to its maximum, target memory
        "ThermalSettings": {"count": 2, "sensors": [[1, 0, 92, 33, 1], [1, 0, 95, 31, 2]]},
        "InforomConfigurationChecksum": 1901255167,
    },
}

#: Both boards alike.
COMMON = {
    "BusType": 2,                               # NVML_BUS_TYPE_PCIE
    "SupportedPerformanceStates": [0],          # P0 alone: the board never leaves it
    "MinMaxClockOfP8": NOT_SUPPORTED,           # not one of its states
    "ValidateInforom": None,
    "DetailedEccErrors": {"l1Cache": 0, "l2Cache": 0, "deviceMemory": 0, "registerFile": 0},
    # GPU, frame buffer, video, bus: present, busy as the utilization readings at the second
    "DynamicPstatesInfo": [[1, 17, 0, 0], [1, 8, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]] + [[0, 0, 0, 0]] * 4,
    "UtilizationRates": {"gpu": 17, "memory": 8},
    "NvLinkErrorCounter": [0, 0, 0, 0, 0],      # replay, recovery, flit CRC, data CRC, data ECC
    "NvLinkErrorCounterNoLink": INVALID_ARGUMENT,
    "ResetNvLinkErrorCounters": None,
}

#: What a real board of these profiles refuses, so the mock refuses it too.
REFUSED = {
    # A100 and H100 have no NVENC engine (their MIG profiles list 0 encoders).
    "EncoderCapacity": NOT_SUPPORTED,
    # Single-GPU boards: nvml.h says bridge chips are on multi-GPU products only.
    "BridgeChipInfo": NOT_SUPPORTED,
    # nvml.h deprecates the NVLink utilization counters and their control for the
    # NVML_FI_DEV_NVLINK_THROUGHPUT_* field values; Ampere's and later drivers refuse them.
    "GetNvLinkUtilizationControl": NOT_SUPPORTED,
    "SetNvLinkUtilizationControl": NOT_SUPPORTED,
    "GetNvLinkUtilizationCounter": NOT_SUPPORTED,
    "ResetNvLinkUtilizationCounter": NOT_SUPPORTED,
    "FreezeNvLinkUtilizationCounter": NOT_SUPPORTED,
}


@pytest.fixture(scope="module", params=["h100", "a100"])
def node(request, staged_node):
    return request.param, staged_node(request.param)


def probe(node, *args):
    _, staged = node
    seen, stderr = run_probe(staged.overlay.lib, staged.env(**{names.ENV_NVML_CONFIG: staged.config}),
                             *args, probe=_PROBE)
    return seen


_PROBE = __file__.replace("test_readers.py", "readers_probe.py")


def test_each_reader_answers_the_profile(node):
    seen = probe(node, "readers", "0")
    for name, value in {**EXPECTED[node[0]], **COMMON, **REFUSED}.items():
        assert seen[name] == value, name


def test_samples_cover_the_last_minute_a_second_apart(node):
    value_type, samples = probe(node, "samples", "0", "1", "0")    # NVML_GPU_UTILIZATION_SAMPLES
    assert value_type == 1                                          # NVML_VALUE_TYPE_UNSIGNED_INT
    assert [t for t, _ in samples] == [NOW_US - s * 1000000 for s in range(59, -1, -1)]
    assert samples[-1][1] == 17                                     # the reading of this second


def test_samples_after_the_last_seen_are_the_moving_readings_of_their_seconds(node):
    _, util = probe(node, "samples", "0", "1", str(NOW_US - 3000000))
    _, memory = probe(node, "samples", "0", "2", str(NOW_US - 3000000 + 1))
    _, power = probe(node, "samples", "0", "0", str(NOW_US - 2000000))
    _, clocks = probe(node, "samples", "0", "5", str(NOW_US - 1000000))
    start = NOW_US - 2000000
    assert util == [[start, 13], [start + 1000000, 23], [NOW_US, 17]]
    assert memory == [[start, 19], [start + 1000000, 18], [NOW_US, 8]]
    assert power == [[start + 1000000, POWER[node[0]]], [NOW_US, POWER[node[0]]]]
    assert clocks == [[NOW_US, {"h100": 345, "a100": 210}[node[0]]]]


#: The boards' draw: their power block does not move.
POWER = {"h100": 120000, "a100": 72000}


def test_no_sample_is_newer_than_the_last_seen_one(node):
    assert probe(node, "samples", "0", "1", str(NOW_US)) == NOT_FOUND


def test_a_board_without_a_module_power_reading_has_no_such_samples(node):
    assert probe(node, "samples", "0", "7", "0") == NOT_SUPPORTED  # NVML_MODULE_POWER_SAMPLES: Grace boards


def test_no_process_utilization_without_a_cuda_process(node):
    assert probe(node, "processes", "0") == NOT_FOUND
    assert probe(node, "processes-info", "0") == NOT_FOUND


def sample_blocks(text: str) -> dict:
    """NVIDIA's nvidia-smi -q: each "... Samples" block of the first GPU, as its lines' values."""
    blocks, current = {}, None
    for line in text.splitlines():
        if line.startswith("GPU ") and blocks:
            break
        if line.strip().endswith("Samples") and ":" not in line:
            current = blocks.setdefault(line.strip(), [])
        elif current is not None and line.startswith(" " * 8) and ":" in line:
            current.append(line.split(":", 1)[1].strip())
        else:
            current = None
    return blocks


def test_nvidia_smi_shows_the_minute_of_samples(node):
    profile, staged = node
    done = staged.run(["-q", "-d", "UTILIZATION,POWER,CLOCK", "-i", "0"])
    assert done.returncode == 0, done.stderr
    blocks = sample_blocks(done.stdout)
    # duration, count, max, min, avg: the utilization moves between the profile's 10 and 45 %
    assert blocks["GPU Utilization Samples"] == ["59.00 sec", "60", "45 %", "10 %", "26 %"]
    assert blocks["Memory Utilization Samples"] == ["59.00 sec", "60", "25 %", "5 %", "15 %"]
    watts = {"h100": "120.00 W", "a100": "72.00 W"}[profile]
    assert blocks["Power Samples"] == ["59.00 sec", "60", watts, watts, watts]
    mhz = {"h100": "345 MHz", "a100": "210 MHz"}[profile]
    assert blocks["SM Clock Samples"] == ["59.00 sec", "60", mhz, mhz, mhz]


def test_a_mig_enabled_gpu_has_no_utilization_samples_or_process_utilization(nvml_lib, tmp_path):
    """nvml.h: on a MIG-enabled GPU the utilization samples and process utilization are not
    supported; its power still is."""
    env = {**board(str(tmp_path), "h100", mig="enabled"), names.ENV_NVML_CLOCK: str(NOW_US // 1000000)}
    seen = run_probe(nvml_lib, env, "samples", "0", "1", "0", probe=_PROBE)[0]
    assert seen == NOT_SUPPORTED                                     # NVML_GPU_UTILIZATION_SAMPLES
    _, power = run_probe(nvml_lib, env, "samples", "0", "0", str(NOW_US - 1000000), probe=_PROBE)[0]
    assert power == [[NOW_US, 120000]]
    assert run_probe(nvml_lib, env, "processes", "0", probe=_PROBE)[0] == NOT_SUPPORTED
    assert run_probe(nvml_lib, env, "processes-info", "0", probe=_PROBE)[0] == NOT_SUPPORTED
    assert run_probe(nvml_lib, env, "readers", "0", probe=_PROBE)[0]["DynamicPstatesInfo"] == NOT_SUPPORTED
