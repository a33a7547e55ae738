"""GPU Performance Monitoring (nvmlGpm*), what DCGM's profiling fields read on Hopper and later
(issue 36), through pynvml on staged h100 and a100 boards at the pinned second: support,
a sample pair's metrics from the moving utilization, MIG samples scaled to their GPU instance,
and bad handles answered with an error, never a crash."""

from __future__ import annotations

import os

from mokka.core import names
from tests.corpus import engine_cases as corpus
from tests.native.conftest import run_probe
from tests.native.mig_nodes import board

_PROBE = __file__.replace("test_gpm.py", "gpm_probe.py")
#: tests/corpus/dynamic_cases.PINNED_CLOCK: the GPU utilization reads 13, 23, 17 % and the
#: memory utilization 19, 18, 8 % in its last three seconds (tests/native/test_readers.py).
NOW = 1700000000
NOT_SUPPORTED = ["err", 3]
INVALID_ARGUMENT = ["err", 2]
NOT_FOUND = ["err", 6]

#: An h100 at 17 % GPU and 8 % memory utilization, both samples of the pinned second.
PERCENT = {
    1: 17.0,        # graphics activity: the GPU utilization
    2: 17.0,        # SM activity
    3: 8.5,         # SM occupancy
    4: 1.7,         # integer
    5: 6.8,         # any tensor: DFMA + HMMA + IMMA
    6: 0.85,        # DFMA tensor
    7: 5.1,         # HMMA tensor
    9: 0.85,        # IMMA tensor
    10: 8.0,        # DRAM bandwidth: the memory utilization
    11: 0.85,       # FP64
    12: 4.25,       # FP32
    13: 1.7,        # FP16
    **{engine: 0.0 for engine in [*range(30, 38), *range(40, 48), 50]},   # NVDEC 0-7, NVJPG 0-7, NVOFA: idle
}
#: gpm.pcie_*_mib_per_sec 4096 at 17 %; each of the 18 active links' 26 562 MB/s in MiB/s at 17 %.
RATES = {20: 696.32, 21: 696.32, 60: 77514.381, 61: 77514.381, **{link: 4306.355 for link in range(62, 98)}}
#: The ids below NVML_GPM_METRIC_MAX that nvml.h does not name.
UNNAMED = [8, *range(14, 20), *range(22, 30), 38, 39, 48, 49, *range(51, 60)]


def env_of(tmp_path, profile: str, **mig) -> dict:
    return {**board(str(tmp_path), profile, **mig), names.ENV_NVML_CLOCK: str(NOW)}


def probe(nvml_lib, env, *args):
    return run_probe(nvml_lib, env, *args, probe=_PROBE)[0]


def metrics(nvml_lib, env, first: int, second: int, *gi: int) -> dict:
    got = probe(nvml_lib, env, "metrics", "0", str(first), str(second), *map(str, gi))
    return got if isinstance(got, list) else {int(k): v for k, v in got.items()}


def test_hopper_supports_gpm_and_ampere_does_not(nvml_lib, tmp_path):
    h100 = probe(nvml_lib, env_of(tmp_path / "h100", "h100"), "support", "0")
    # streaming: off (0), and setting it off succeeds (0) while on is refused
    assert h100 == {"supported": 1, "streaming": 0, "stream_on": NOT_SUPPORTED, "stream_off": 0,
                    "sample": "taken"}
    a100 = probe(nvml_lib, env_of(tmp_path / "a100", "a100"), "support", "0")
    assert a100 == {"supported": 0, "streaming": NOT_SUPPORTED, "stream_on": NOT_SUPPORTED,
                    "stream_off": NOT_SUPPORTED, "sample": NOT_SUPPORTED}


def test_every_metric_of_a_sample_pair_follows_the_utilization_of_its_second(nvml_lib, tmp_path):
    seen = metrics(nvml_lib, env_of(tmp_path, "h100"), NOW, NOW)
    assert {k: v for k, v in seen.items() if k in PERCENT} == {k: [0, v, "%"] for k, v in PERCENT.items()}
    assert {k: v for k, v in seen.items() if k in RATES} == {k: [0, v, "MiB/sec"] for k, v in RATES.items()}
    assert {k: v for k, v in seen.items() if k in UNNAMED} == {k: [3, 0.0, None] for k in UNNAMED}
    assert sorted(seen) == list(range(1, 98))


def test_a_longer_window_averages_its_seconds(nvml_lib, tmp_path):
    """(NOW - 2, NOW]: the seconds reading 23 and 17 % GPU, 18 and 8 % memory."""
    seen = metrics(nvml_lib, env_of(tmp_path, "h100"), NOW - 2, NOW)
    assert seen[2] == [0, 20.0, "%"]
    assert seen[10] == [0, 13.0, "%"]
    assert seen[20] == [0, 819.2, "MiB/sec"]
    # the samples' order does not matter
    assert metrics(nvml_lib, env_of(tmp_path, "h100"), NOW, NOW - 2)[2] == [0, 20.0, "%"]


def test_a_board_without_gpm_samples_nothing(nvml_lib, tmp_path):
    assert metrics(nvml_lib, env_of(tmp_path, "a100"), NOW, NOW) == NOT_SUPPORTED


def test_a_mig_sample_is_of_its_gpu_instance_share(nvml_lib, tmp_path):
    env = env_of(tmp_path, "h100", mig="enabled", layout=["3g.40gb", "2g.20gb", "1g.10gb"])
    # the GPU instances' ids: 2 (3g, 60 of 132 SMs), 3 (2g, 32), 9 (1g, 16)
    pcie = {gi: metrics(nvml_lib, env, NOW, NOW, gi)[20] for gi in (2, 3, 9)}
    assert pcie == {2: [0, 316.509, "MiB/sec"], 3: [0, 168.805, "MiB/sec"], 9: [0, 84.402, "MiB/sec"]}
    three_g = metrics(nvml_lib, env, NOW, NOW, 2)
    assert three_g[2] == [0, 17.0, "%"]                     # a percentage of its own SMs
    assert three_g[60] == [0, 35233.81, "MiB/sec"]
    assert metrics(nvml_lib, env, NOW, NOW, 1) == NOT_FOUND  # no such GPU instance
    # the whole GPU still samples as a whole
    assert metrics(nvml_lib, env, NOW, NOW)[20] == [0, 696.32, "MiB/sec"]


def test_mig_samples_need_mig_on(nvml_lib, tmp_path):
    assert metrics(nvml_lib, env_of(tmp_path, "h100"), NOW, NOW, 0) == NOT_SUPPORTED


def test_bad_handles_and_structs_are_errors_not_crashes(nvml_lib, tmp_path):
    seen = probe(nvml_lib, env_of(tmp_path, "h100"), "handles", "0")
    assert seen == {
        "free": None,
        "free_twice": INVALID_ARGUMENT,
        "get_into_freed": INVALID_ARGUMENT,
        "free_garbage": INVALID_ARGUMENT,
        "free_null": INVALID_ARGUMENT,
        "alloc_null": 2,
        "get_garbage": INVALID_ARGUMENT,
        "metrics_untaken": INVALID_ARGUMENT,
        # one never taken beside a taken one: the taken one's second, the GPU's 17 % then
        "metrics_one_taken": [0, 17.0],
        "metrics_taken": [0, 17.0],
        "metrics_version": ["err", 25],                     # NVML_ERROR_ARGUMENT_VERSION_MISMATCH
        "metrics_too_many": INVALID_ARGUMENT,
        "metrics_freed": INVALID_ARGUMENT,
        "metrics_null": 2,
        "support_version": 25,
        # a process that never frees runs out at 1024 live samples, and a free makes room
        "exhausted": ["err", 20],                           # NVML_ERROR_MEMORY
        "held": 1024,
        "after_free": "allocated",
    }


def test_gpm_agrees_with_the_utilization_rates(nvml_lib, tmp_path):
    """DCGM's SM activity (GPM's SM activity / 100) reads what nvmlDeviceGetUtilizationRates does."""
    env = env_of(tmp_path, "h100")
    rates = run_probe(nvml_lib, env, "readers", "0",
                      probe=__file__.replace("test_gpm.py", "readers_probe.py"))[0]["UtilizationRates"]
    seen = metrics(nvml_lib, env, NOW, NOW)
    assert [seen[2][1], seen[10][1]] == [float(rates["gpu"]), float(rates["memory"])] == [17.0, 8.0]


def test_an_override_of_the_utilization_moves_gpm_with_it(nvml_lib, tmp_path):
    env = env_of(tmp_path, "h100")
    corpus.write_overrides(os.path.dirname(env[names.ENV_NVML_CONFIG]),
                           {0: "utilization:\n  gpu: 90\n  memory: 40\n"})
    seen = metrics(nvml_lib, env, NOW, NOW)
    assert [seen[2], seen[10], seen[20]] == [[0, 90.0, "%"], [0, 40.0, "%"], [0, 3686.4, "MiB/sec"]]


def test_threads_polling_at_once_each_read_their_samples(nvml_lib, tmp_path):
    seen = probe(nvml_lib, env_of(tmp_path, "h100"), "threads", "0")
    assert seen == {"sm 17.0": 2000, "garbage ['err', 2]": 2000}
