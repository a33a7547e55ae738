"""Moving readings on a node staged by the agent: with the second pinned
(MOCK_NVML_CLOCK), our nvidia-smi, NVIDIA's nvidia-smi 550 over the mock library
and pynvml read the same values, the shared vectors' (tests/corpus/dynamic_cases.py);
``mokka ctl`` values win over them."""

from __future__ import annotations


import pytest

from mokka.core import names
from tests.corpus import dynamic_cases as corpus
from tests.native.conftest import run_probe
from tests.native.staged import ctl, nvml_build, ok, staged_node  # noqa: F401 (fixtures)

QUERY = ["--query-gpu=index,temperature.gpu,power.draw,utilization.gpu,utilization.memory",
         "--format=csv,noheader,nounits"]
#: The chart-baseline vectors: (GPU, second) -> (°C, mW, util.gpu, util.memory).
CHART = {(v.gpu, v.clock): v.reads for v in corpus.VECTORS if v.dynamic_metrics is corpus.CHART
         and v.clock < 1 << 32}
#: Their draws as both nvidia-smis print them (NVIDIA's formats a C float: 252.285 W prints .29).
PRINTED_WATTS = {239117: "239.12", 241749: "241.75", 232959: "232.96", 252285: "252.29"}


@pytest.fixture(scope="module")
def node(staged_node, tmp_path_factory):
    path = tmp_path_factory.mktemp("dynamic-profile") / "chart-dynamic.yaml"
    path.write_bytes(corpus.profile_text(corpus.CHART))
    node = staged_node(str(path))
    yield node
    ctl(node, "reset")


def pynvml_readings(node, clock) -> list:
    seen, stderr = run_probe(node.overlay.lib, node.env(**{names.ENV_NVML_CONFIG: node.config,
                                                            names.ENV_NVML_CLOCK: clock}), "visible")
    assert seen["init"] == 0, stderr
    return [g["readings"] for g in seen["gpus"]]


@pytest.mark.parametrize("clock", sorted({c for _, c in CHART}))
def test_both_nvidia_smis_and_pynvml_read_the_vectors(node, clock):
    theirs = ok(node.run(QUERY, MOCK_NVML_CLOCK=clock))
    assert ok(node.run_python(QUERY, MOCK_NVML_CLOCK=clock)) == theirs
    rows = [r.split(", ") for r in theirs.splitlines()]
    readings = pynvml_readings(node, clock)
    assert len(rows) == len(readings) == 8
    for (gpu, second), (temp, mw, util, mem) in CHART.items():
        if second == clock:
            assert rows[gpu] == [str(gpu), str(temp), PRINTED_WATTS[mw], str(util), str(mem)]
            assert readings[gpu] == [temp, mw, util, mem]


def test_the_chart_baseline_at_second_60_through_nvidia_smi(node):
    rows = ok(node.run(QUERY, MOCK_NVML_CLOCK=60)).splitlines()
    assert rows[0] == "0, 69, 241.75, 100, 100"        # 55 C + the ramp's 15 C - 1 C of noise
    assert rows[3] == "3, 69, 252.29, 100, 100"


def test_ctl_values_win_over_moving_readings(node):
    done = ctl(node, "set", "3", "temperature=88", "utilization.gpu=5")
    assert (done.returncode, done.stderr) == (0, "")
    theirs = ok(node.run(QUERY, MOCK_NVML_CLOCK=60))
    assert ok(node.run_python(QUERY, MOCK_NVML_CLOCK=60)) == theirs
    assert theirs.splitlines()[3] == "3, 88, 252.29, 5, 100"         # power and memory still move
    assert pynvml_readings(node, 60)[3] == [88, 252285, 5, 100]
    ok(ctl(node, "reset", "3"))
    assert ok(node.run(QUERY, MOCK_NVML_CLOCK=60)).splitlines()[3] == "3, 69, 252.29, 100, 100"


MEMORY_QUERY = ["--query-gpu=index,memory.total,memory.reserved,memory.used,memory.free",
                "--format=csv,noheader,nounits"]


@pytest.fixture(scope="module")
def memory_node(staged_node, tmp_path_factory):
    path = tmp_path_factory.mktemp("memory-profile") / "chart-memory.yaml"
    path.write_bytes(corpus.profile_text(corpus.CHART_MEMORY))
    node = staged_node(str(path))
    yield node
    ctl(node, "reset")


def test_moving_memory_reads_the_same_through_both_nvidia_smis_and_pynvml(memory_node):
    theirs = ok(memory_node.run(MEMORY_QUERY, MOCK_NVML_CLOCK=60))
    assert ok(memory_node.run_python(MEMORY_QUERY, MOCK_NVML_CLOCK=60)) == theirs
    rows = theirs.splitlines()
    assert rows[0] == "0, 81920, 1024, 26554, 54342"          # the vectors: 26554 MiB used at t=60
    assert rows[3] == "3, 81920, 1024, 44808, 36088"
    seen, stderr = run_probe(memory_node.overlay.lib, memory_node.env(
        **{names.ENV_NVML_CONFIG: memory_node.config, names.ENV_NVML_CLOCK: 60}), "visible")
    assert [g["memory"]["v2"][3] >> 20 for g in seen["gpus"]] == [int(r.split(", ")[3]) for r in rows]


def test_ctl_memory_used_wins_over_moving_memory_through_both_nvidia_smis(memory_node):
    ok(ctl(memory_node, "set", "3", "memory.used=1000"))
    theirs = ok(memory_node.run(MEMORY_QUERY, MOCK_NVML_CLOCK=60))
    assert ok(memory_node.run_python(MEMORY_QUERY, MOCK_NVML_CLOCK=60)) == theirs
    assert theirs.splitlines()[3] == "3, 81920, 1024, 1000, 79896"
    assert theirs.splitlines()[0] == "0, 81920, 1024, 26554, 54342"
    ok(ctl(memory_node, "reset", "3"))
    assert ok(memory_node.run(MEMORY_QUERY, MOCK_NVML_CLOCK=60)).splitlines()[3] == "3, 81920, 1024, 44808, 36088"
