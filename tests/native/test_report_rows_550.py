"""NVIDIA's own nvidia-smi 550, staged by the agent over the mock library, prints the
rows it takes from the calls tests/native/test_report_queries.py drives: GPU T.Limit
Temp (export table slot 239, from Ada on) and the SRAM ECC rows
(nvmlDeviceGetSramEccErrorStatus, nvmlDeviceGetMemoryErrorCounter at SRAM).
"""

from __future__ import annotations

import os

import pytest
import yaml

from tests.corpus import engine_cases as corpus
from tests.native.staged import ctl, nvml_build, ok, staged_node  # noqa: F401 (fixtures)
from tests.native.report_values import SRAM
from tests.native.smi_compare import parse_q

SRAM_OVERRIDES = {1: yaml.safe_dump({"ecc": {"sram": SRAM}})}


@pytest.fixture
def node(request, staged_node):
    """A staged node of the profile the test is parametrized with; its overrides dropped after."""
    node = staged_node(request.param)
    yield node
    ok(ctl(node, "reset"))


def rows(node, key: tuple) -> list[str]:
    """One -q row of every GPU: ``key`` is its path below the GPU, e.g. ("Temperature", "GPU T.Limit Temp")."""
    q = parse_q(ok(node.run(["-q"])))
    gpus = sorted({k[0] for k in q})
    return [q[(gpu, *key)] for gpu in gpus]


@pytest.mark.parametrize("node", ["h100"], indirect=True)
def test_tlimit_row_is_the_maximum_operating_temperature_less_the_temperature(node):
    assert rows(node, ("Temperature", "GPU T.Limit Temp")) == ["49 C"] * 8          # 83 C - 34 C
    ok(ctl(node, "set", "3", "temperature=92"))              # the shutdown temperature, the most ctl sets
    assert rows(node, ("Temperature", "GPU T.Limit Temp")) == ["49 C"] * 3 + ["-9 C"] + ["49 C"] * 4
    xml = ok(node.run(["-q", "-x", "-i", "3"]))
    assert "<gpu_temp_tlimit>-9 C</gpu_temp_tlimit>" in xml
    query = ok(node.run(["--query-gpu=temperature.gpu,temperature.gpu.tlimit", "--format=csv,noheader"]))
    assert query.splitlines() == ["34, 49"] * 3 + ["92, -9"] + ["34, 49"] * 4


@pytest.mark.parametrize("node", ["a100"], indirect=True)
def test_tlimit_row_reads_na_before_ada(node):
    assert rows(node, ("Temperature", "GPU T.Limit Temp")) == ["N/A"] * 8
    assert rows(node, ("Temperature", "GPU Current Temp")) == ["33 C"] * 8       # a positive control


@pytest.mark.parametrize("node", ["gb200"], indirect=True)
def test_sram_rows_print_the_states_counts(node):
    corpus.write_overrides(node.overlay.driver_config, SRAM_OVERRIDES)
    q = parse_q(ok(node.run(["-q"])))
    gpu = sorted({k[0] for k in q})[1]
    ecc = {k[2:]: v for k, v in q.items() if k[0] == gpu and k[1] == "ECC Errors"}
    assert {k: v for k, v in ecc.items() if "SRAM" in k[-1]} == {
        ("Volatile", "SRAM Correctable"): "5", ("Volatile", "SRAM Uncorrectable Parity"): "2",
        ("Volatile", "SRAM Uncorrectable SEC-DED"): "3",
        ("Aggregate", "SRAM Correctable"): "50", ("Aggregate", "SRAM Uncorrectable Parity"): "20",
        ("Aggregate", "SRAM Uncorrectable SEC-DED"): "30", ("Aggregate", "SRAM Threshold Exceeded"): "Yes",
        ("Aggregate Uncorrectable SRAM Sources", "SRAM L2"): "1",
        ("Aggregate Uncorrectable SRAM Sources", "SRAM SM"): "2",
        ("Aggregate Uncorrectable SRAM Sources", "SRAM Microcontroller"): "3",
        ("Aggregate Uncorrectable SRAM Sources", "SRAM PCIE"): "4",
        ("Aggregate Uncorrectable SRAM Sources", "SRAM Other"): "5"}
    query = ok(node.run(["-i", "0,1", "--format=csv,noheader", "--query-gpu=ecc.errors.corrected.volatile.sram,"
                         "ecc.errors.uncorrected.volatile.sram,ecc.errors.uncorrected.aggregate.sram"]))
    assert query.splitlines() == ["0, 0, 0", "5, 5, 50"]
