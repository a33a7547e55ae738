"""The shared engine corpus (tests/corpus/engine_cases.py) through the mock libnvidia-ml.so.1.

The C library cannot say which physical GPU a handle is; the built-in
profiles give GPU n the minor number n, so the minor stands in for it.
"""

from __future__ import annotations

import pytest

from mokka.agent import desired as ds
from mokka.core import profile as prof
from tests.corpus import engine_cases as corpus
from tests.native.conftest import run_probe


@pytest.mark.parametrize("case", corpus.CASES, ids=corpus.IDS)
def test_c_library_sees_what_the_corpus_says(case, nvml_lib, tmp_path):
    env = corpus.stage(case, str(tmp_path))
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert seen["init"] == 0, stderr
    assert [(g["uuid"], g["index"], g["minor"]) for g in seen["gpus"]] == list(case.visible)
    for gpu in seen["gpus"]:
        want = corpus.fabric_of(case, gpu["index"])
        got = gpu["fabric"]
        if want is None:
            assert got == ["err", 3], gpu["index"]          # NVML_ERROR_NOT_SUPPORTED
        else:
            assert got[:3] == list(want), gpu["index"]
            assert got[3] == 0                               # status NVML_SUCCESS
    for index, name in case.names.items():
        assert seen["gpus"][index]["name"] == name
    for index, want in case.readings.items():
        assert tuple(seen["gpus"][index]["readings"]) == want, index
    assert stderr == ""


def test_an_index_of_two_digits_is_read_in_decimal(nvml_lib, tmp_path):
    # Sixteen GPUs: "10" is the eleventh, "012" the thirteenth (minor numbers follow the index).
    path = tmp_path / "a100x16.yaml"
    path.write_bytes(ds.with_num_devices(prof.read("a100")[1], 16))
    env = corpus.stage(corpus.Case("sixteen", str(path), ()), str(tmp_path / "node"))
    env["MOCK_NVML_VISIBLE_DEVICES"] = "10,012"
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert [(g["index"], g["minor"]) for g in seen["gpus"]] == [(0, 10), (1, 12)], stderr
