"""The export-table slots NVIDIA's nvidia-smi -r calls, driven directly through the
mock library (probe.py reset): which override documents a reset removes, as a table
of (documents before, GPUs reset, documents after). The run of NVIDIA's binary itself
is tests/native/test_gpu_reset.py; this file also runs under ASan and UBSan
(tests/native/test_sanitized.py)."""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from tests.corpus import engine_cases
from tests.native.conftest import run_probe

HOT = "thermal: {temperature_gpu_c: 90}\n"

# (id, documents before {scope: text}, GPUs reset, the files left in the overrides directory)
CASES = [
    ("one of two GPUs", {0: HOT, 1: HOT}, [1], ["gpu0.nvml", "gpu0.yaml"]),
    ("the first GPU", {0: HOT, 1: HOT}, [0], ["gpu1.nvml", "gpu1.yaml"]),
    ("both in one call", {0: HOT, 1: HOT}, [0, 1], []),
    ("a GPU with no document: nothing removed", {0: HOT}, [5], ["gpu0.nvml", "gpu0.yaml"]),
    ("gpu10 is not gpu1", {10: HOT, 1: HOT}, [1], ["gpu10.nvml", "gpu10.yaml"]),
    ("the document for every GPU stays", {None: HOT, 1: HOT}, [1], ["all.nvml", "all.yaml"]),
    ("flow style, anchors and JSON are only files", {1: "{a: &x {b: 1}, c: *x}\n", 2: '{"d": 1}\n'},
     [1, 2], []),
    ("no overrides at all", {}, [1], []),
]


@pytest.mark.parametrize("before, gpus, after", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reset_removes_the_gpus_documents(before, gpus, after, nvml_lib, tmp_path):
    env = engine_cases.stage(engine_cases.Case("reset", "h100", ()), str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    engine_cases.write_overrides(config_dir, before)
    seen, stderr = run_probe(nvml_lib, env, "reset", *map(str, gpus))
    assert seen["primary"] == [0] * len(gpus) and seen["primary_word"] == [0] * len(gpus)
    assert seen["mode"] == [0, 0] and seen["group"] == [0, 0]
    assert (seen["reset"], stderr) == (0, "")
    assert sorted(os.listdir(engine_cases.overrides_dir(config_dir))) == after
    assert sorted(os.listdir(config_dir)) == ["config.nvml", "config.yaml", "overrides"]


def test_a_document_that_cannot_be_removed_fails_the_reset_naming_it(nvml_lib, tmp_path):
    env = engine_cases.stage(engine_cases.Case("reset", "h100", ()), str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    engine_cases.write_overrides(config_dir, {1: HOT})
    directory = engine_cases.overrides_dir(config_dir)
    os.replace(os.path.join(directory, "gpu1.yaml"), os.path.join(directory, "keep.yaml"))
    os.mkdir(os.path.join(directory, "gpu1.yaml"))          # a directory: unlink fails with EISDIR
    seen, stderr = run_probe(nvml_lib, env, "reset", "1")
    assert seen["reset"] == 4                                 # NVML_ERROR_NO_PERMISSION
    assert stderr == (f"mock NVML: ignoring overrides {directory}/gpu1.yaml: a directory, not a regular file\n"
                      f"mock NVML: cannot reset: removing {directory}/gpu1.yaml: Is a directory "
                      "(try 'mokka ctl reset' as the file's owner)\n")
