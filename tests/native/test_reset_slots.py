"""The export-table slots NVIDIA's nvidia-smi -r calls, driven directly through the
mock library (probe.py reset): how the reset edits overrides.yaml and its
companion, as a table of (file before, GPUs, file after or refusal). The run of
NVIDIA's binary itself is tests/native/test_gpu_reset.py; this file also runs
under ASan and UBSan (tests/native/test_sanitized.py)."""

from __future__ import annotations

import os

import pytest
import yaml

from mokka.core import flatstate, names
from tests.corpus import engine_cases
from tests.native.conftest import run_probe

PYYAML_TWO = "version: 1\ndevices:\n  '0':\n    thermal:\n      temperature_gpu_c: 90\n" \
             "  '1':\n    power:\n      current_draw_mw: 300000\n"

# (id, overrides.yaml before, GPUs reset, overrides.yaml after; None: refused, left alone)
CASES = [
    ("PyYAML's block style, one of two buckets", PYYAML_TWO, [1],
     "version: 1\ndevices:\n  '0':\n    thermal:\n      temperature_gpu_c: 90\n"),
    ("the first bucket", PYYAML_TWO, [0],
     "version: 1\ndevices:\n  '1':\n    power:\n      current_draw_mw: 300000\n"),
    ("both buckets in one call: an empty mapping, as PyYAML writes it", PYYAML_TWO, [0, 1],
     "version: 1\ndevices: {}\n"),
    ("a GPU with no bucket: nothing written", PYYAML_TWO, [5], PYYAML_TWO),
    ("a key that only starts with the index stays", "devices:\n  '10':\n    utilization: {gpu: 5}\n"
     "  '1':\n    utilization: {gpu: 6}\n", [1], "devices:\n  '10':\n    utilization: {gpu: 5}\n"),
    ("plain and double-quoted keys, flow values, comments, a later top-level key",
     "# mine\ndevices:   # per GPU\n    1: {thermal: {temperature_gpu_c: 95}}\n"
     "    \"2\": {power: {current_draw_mw: 1}}\n"
     "    # about 3\n    3:\n      fabric: {state: completed}\nall:\n  utilization: {gpu: 1}\n", [1, 3],
     "# mine\ndevices:   # per GPU\n    \"2\": {power: {current_draw_mw: 1}}\n    # about 3\n"
     "all:\n  utilization: {gpu: 1}\n"),
    ("no final newline", "devices:\n  '1':\n    lost: true", [1], "devices: {}\n"),
    ("an empty devices mapping", "version: 1\ndevices: {}\n", [1], "version: 1\ndevices: {}\n"),
    ("an empty file", "", [1], ""),
    ("flow style", '{devices: {"1": {lost: true}}}\n', [1], None),
    ("flow devices", 'devices: {"1": {lost: true}}\n', [1], None),
    ("a list of devices", "devices:\n  - 1\n", [1], None),
    ("an anchor in the entry", "devices:\n  '1': &x {lost: true}\n  '2': *x\n", [1], None),
]


@pytest.mark.parametrize("before, gpus, after", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reset_edits_the_pair_as_pythons_reset_would(before, gpus, after, nvml_lib, tmp_path):
    env = engine_cases.stage(engine_cases.Case("reset", "h100", ()), str(tmp_path))
    path = os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), names.OVERRIDES_FILE)
    companion = flatstate.companion_path(path)
    engine_cases.write_overrides(path, before)
    before_pair = (open(path, "rb").read(), open(companion, "rb").read())
    seen, stderr = run_probe(nvml_lib, env, "reset", *map(str, gpus))
    assert seen["primary"] == [0] * len(gpus) and seen["primary_word"] == [0] * len(gpus)
    assert seen["mode"] == [0, 0] and seen["group"] == [0, 0]
    if after is None:
        assert seen["reset"] == 3                               # NVML_ERROR_NOT_SUPPORTED
        assert stderr.startswith(f"mock NVML: cannot reset GPU {gpus[0]}: {path} is not as Mokka writes it (")
        assert (open(path, "rb").read(), open(companion, "rb").read()) == before_pair
        return
    assert (seen["reset"], stderr) == (0, "")
    text = open(path, "rb").read()
    assert text.decode() == after
    assert open(companion, "rb").read() == flatstate.overrides_companion(yaml.safe_load(text), text)
    if after == before:
        assert (text, open(companion, "rb").read()) == before_pair


def test_a_stale_companion_is_refused(nvml_lib, tmp_path):
    env = engine_cases.stage(engine_cases.Case("reset", "h100", ()), str(tmp_path))
    path = os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), names.OVERRIDES_FILE)
    engine_cases.write_overrides(path, PYYAML_TWO)
    with open(path, "a") as f:
        f.write("# edited after ctl wrote it\n")
    seen, stderr = run_probe(nvml_lib, env, "reset", "1")
    assert seen["reset"] == 3
    assert "(its companion does not match it)" in stderr
    assert open(path).read() == PYYAML_TWO + "# edited after ctl wrote it\n"


def test_the_file_keeps_its_mode(nvml_lib, tmp_path):
    env = engine_cases.stage(engine_cases.Case("reset", "h100", ()), str(tmp_path))
    path = os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), names.OVERRIDES_FILE)
    engine_cases.write_overrides(path, PYYAML_TWO)
    os.chmod(path, 0o664)
    seen, _ = run_probe(nvml_lib, env, "reset", "0")
    assert seen["reset"] == 0
    assert [os.stat(p).st_mode & 0o777 for p in (path, flatstate.companion_path(path))] == [0o664, 0o664]
    assert sorted(os.listdir(os.path.dirname(path))) == sorted(
        ["config.yaml", "config.nvml", "state.json", "overrides.yaml", "overrides.nvml"])
