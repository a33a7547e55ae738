"""Moving readings through the Python engine: the shared vectors
(tests/corpus/dynamic_cases.py), and the rules around them."""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from mokka.smi import dynamic, engine
from tests.corpus import dynamic_cases as corpus
from tests.corpus import engine_cases


def reads(gpu: dict) -> tuple:
    return (gpu["thermal"]["temperature_gpu_c"], gpu["power"]["current_draw_mw"],
            gpu["utilization"]["gpu"], gpu["utilization"]["memory"])


@pytest.mark.parametrize("vector", corpus.VECTORS, ids=corpus.IDS)
def test_python_engine_reads_what_the_vector_says(vector, tmp_path):
    node = engine.load(corpus.stage(vector, str(tmp_path)))
    assert reads(node.gpus[vector.gpu]) == vector.reads


def test_the_physical_index_draws_not_the_visible_one(tmp_path):
    vector = corpus.VECTORS[3]                       # GPU 3 of the chart baseline
    env = corpus.stage(vector, str(tmp_path))
    env[names.ENV_NVML_VISIBLE_DEVICES] = "3"
    [gpu] = engine.load(env).gpus
    assert gpu["index"] == 0 and reads(gpu) == (69, 252285, 100, 100)


@pytest.mark.parametrize("value", ["", "abc", "-5", "1.5", "12 34", "18446744073709551616"])
def test_a_clock_that_is_no_second_is_the_real_time(value, monkeypatch):
    monkeypatch.setattr(dynamic.time, "time", lambda: 1234.9)
    assert dynamic.clock({names.ENV_NVML_CLOCK: value}) == 1234


@pytest.mark.parametrize("value, second", [("0", 0), (" 77\n", 77), ("18446744073709551615", 2**64 - 1)])
def test_a_pinned_clock_is_that_second(value, second):
    assert dynamic.clock({names.ENV_NVML_CLOCK: value}) == second


def test_ramp_is_a_smooth_rise_and_fall():
    heights = [dynamic.ramp(t, 15, 120) for t in range(0, 121, 15)]
    assert heights == [0, 2, 7, 12, 15, 12, 7, 2, 0]


def test_an_empty_block_moves_nothing():
    gpu = {"index": 0, "thermal": {"temperature_gpu_c": 40},
           "dynamic_metrics": {"temperature": {"base_c": None}, "power": {}}}
    dynamic.apply(gpu, 5)
    assert gpu == {"index": 0, "thermal": {"temperature_gpu_c": 40},
                   "dynamic_metrics": {"temperature": {"base_c": None}, "power": {}}}


def test_overrides_win_over_moving_readings_and_the_others_keep_moving(tmp_path):
    env = corpus.stage(corpus.VECTORS[3], str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    engine_cases.write_overrides(os.path.join(config_dir, names.OVERRIDES_FILE),
                                 'version: 1\ndevices:\n  "3":\n    thermal: {temperature_gpu_c: 81}\n'
                                 '    utilization: {gpu: 7}\n')
    assert reads(engine.load(env).gpus[3]) == (81, 252285, 7, 100)


@pytest.mark.parametrize("mw, printed", [
    (120125, "120.12"), (252285, "252.29"), (252595, "252.60"), (100005, "100.00"), (100015, "100.01"),
    (100035, "100.04"), (100045, "100.04"), (100095, "100.10"), (777775, "777.78"), (123455, "123.46")])
def test_watts_print_as_nvidia_smi_550_printed_them(mw, printed):
    """Moving draws hit the third decimal; these are what NVIDIA's nvidia-smi 550 printed
    over the mock library for these draws (it rounds a C float, not a double)."""
    from mokka.smi import values

    assert values.watts(mw) == f"{printed} W"


@pytest.mark.parametrize("vector", corpus.MEMORY_VECTORS, ids=corpus.MEMORY_IDS)
def test_python_engine_moves_memory_used_as_the_vector_says(vector, tmp_path):
    from mokka.smi import values

    gpu = engine.load(corpus.stage(vector, str(tmp_path))).gpus[vector.gpu]
    assert gpu["memory"]["used_bytes"] == vector.used_mib << 20
    assert values.memory_mib(gpu) == {"total": 81920, "reserved": 1024, "used": vector.used_mib,
                                      "free": 80896 - vector.used_mib}


def test_moving_memory_needs_a_total():
    gpu = {"index": 0, "memory": {"used_bytes": 5 << 20},
           "dynamic_metrics": {"memory": {"pattern": "busy", "used_min_pct": 50}}}
    dynamic.apply(gpu, 5)
    assert gpu["memory"] == {"used_bytes": 5 << 20}


def test_ctl_memory_used_wins_over_moving_memory(tmp_path):
    vector = corpus.MEMORY_VECTORS[-1]                  # GPU 3 of the chart baseline with memory, t=60
    env = corpus.stage(vector, str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    engine_cases.write_overrides(os.path.join(config_dir, names.OVERRIDES_FILE),
                                 'version: 1\ndevices:\n  "3":\n    memory: {used_bytes: 1048576000}\n')
    gpus = engine.load(env).gpus
    assert gpus[3]["memory"]["used_bytes"] == 1000 << 20
    assert reads(gpus[3]) == (69, 252285, 100, 100)                  # the rest still moves
    assert gpus[0]["memory"]["used_bytes"] == 26554 << 20
