"""Moving readings through the mock libnvidia-ml.so.1: the vectors of
tests/corpus/dynamic_cases.py, the clock, and precedence."""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from tests.corpus import dynamic_cases as corpus
from tests.corpus import engine_cases
from tests.native.conftest import run_probe


@pytest.mark.parametrize("vector", corpus.VECTORS, ids=corpus.IDS)
def test_c_library_reads_what_the_vector_says(vector, nvml_lib, tmp_path):
    seen, stderr = run_probe(nvml_lib, corpus.stage(vector, str(tmp_path)), "visible")
    assert seen["init"] == 0, stderr
    assert tuple(seen["gpus"][vector.gpu]["readings"]) == vector.reads
    assert stderr == ""


def test_the_physical_index_draws_not_the_visible_one(nvml_lib, tmp_path):
    env = corpus.stage(corpus.VECTORS[3], str(tmp_path))       # GPU 3 of the chart baseline
    env[names.ENV_NVML_VISIBLE_DEVICES] = "3"
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert [g["readings"] for g in seen["gpus"]] == [[69, 252285, 100, 100]], stderr


def test_overrides_win_over_moving_readings_and_the_others_keep_moving(nvml_lib, tmp_path):
    env = corpus.stage(corpus.VECTORS[3], str(tmp_path))
    engine_cases.write_overrides(os.path.dirname(env[names.ENV_NVML_CONFIG]),
                                 {3: "thermal: {temperature_gpu_c: 81}\nutilization: {gpu: 7}\n"})
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert seen["gpus"][3]["readings"] == [81, 252285, 7, 100], stderr


def test_a_pinned_second_may_have_blanks_around_it(nvml_lib, tmp_path):
    vector = corpus.VECTORS[1]                                    # GPU 0 of the chart baseline at 60
    env = corpus.stage(vector, str(tmp_path))
    env[names.ENV_NVML_CLOCK] = " 60\n"
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert seen["gpus"][0]["readings"] == [69, 241749, 100, 100], stderr


@pytest.mark.parametrize("vector", corpus.MEMORY_VECTORS, ids=corpus.MEMORY_IDS)
def test_c_library_moves_memory_used_as_the_vector_says(vector, nvml_lib, tmp_path):
    seen, stderr = run_probe(nvml_lib, corpus.stage(vector, str(tmp_path)), "visible")
    assert seen["init"] == 0, stderr
    mem = seen["gpus"][vector.gpu]["memory"]
    total, reserved, used = 81920 << 20, 1024 << 20, vector.used_mib << 20
    free = total - reserved - used
    assert mem["v2"] == [total, reserved, free, used]
    assert mem["v1"] == [total, free, total - free]                 # v1 counts the reserved as used
    assert stderr == ""


def test_ctl_memory_used_wins_over_moving_memory(nvml_lib, tmp_path):
    env = corpus.stage(corpus.MEMORY_VECTORS[-1], str(tmp_path))  # GPU 3 of the chart with memory, t=60
    engine_cases.write_overrides(os.path.dirname(env[names.ENV_NVML_CONFIG]),
                                 {3: "memory: {used_bytes: 1048576000}\n"})
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert seen["gpus"][3]["memory"]["v2"][3] == 1000 << 20, stderr
    assert seen["gpus"][3]["readings"] == [69, 252285, 100, 100]
    assert seen["gpus"][0]["memory"]["v2"][3] == 26554 << 20


@pytest.mark.parametrize("value", ["", "abc", "-5", "1.5", "12 34", "18446744073709551616"])
def test_a_clock_that_is_no_second_is_the_real_time(value, nvml_lib, tmp_path):
    """Burst utilization is 100 % in the first half of each 30 s, 0 % after: a process
    given no usable second reads the half the real clock is in."""
    import time

    env = corpus.stage(corpus.VECTORS[0], str(tmp_path))
    env[names.ENV_NVML_CLOCK] = value
    for _ in range(3):
        before = int(time.time())
        seen, stderr = run_probe(nvml_lib, env, "visible")
        after = int(time.time())
        if before % 30 < 15 and after % 30 < 15 or before % 30 >= 15 and after % 30 >= 15:
            break
    want = 100 if before % 30 < 15 else 0
    assert seen["gpus"][0]["readings"][2:] == [want, want], stderr
