"""The shared engine corpus (tests/corpus/engine_cases.py) through the Python engine."""

from __future__ import annotations

import pytest

from mokka.smi import engine
from mokka.smi import values as v
from tests.corpus import engine_cases as corpus


@pytest.mark.parametrize("case", corpus.CASES, ids=corpus.IDS)
def test_python_engine_sees_what_the_corpus_says(case, tmp_path):
    env = corpus.stage(case, str(tmp_path))
    node = engine.load(env)
    assert [(g["uuid"], g["index"], g["physical_index"]) for g in node.gpus] == list(case.visible)
    for gpu in node.gpus:
        want = corpus.fabric_of(case, gpu["index"])
        state = v.fabric_state(gpu)
        got = None if state == "not_supported" else (
            state, gpu["fabric"]["clique_id"], gpu["fabric"]["cluster_uuid"])
        assert got == want, gpu["index"]
    for index, name in case.names.items():
        assert node.gpus[index]["name"] == name
    for index, want in case.readings.items():
        gpu = node.gpus[index]
        assert (gpu["thermal"]["temperature_gpu_c"], gpu["power"]["current_draw_mw"],
                gpu["utilization"]["gpu"], gpu["utilization"]["memory"]) == want, index
