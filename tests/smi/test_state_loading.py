"""The shims' state loader (mokka.core.state): fast path, digest check, fallbacks."""

from __future__ import annotations

import json

import pytest

from mokka.core import names
from mokka.core import state as core_state


def test_staged_state_loads_as_written(staged):
    ov = staged("gb200")
    cfg = str(ov.config_dir / names.PROFILE_FILE)
    assert core_state.load_for_config(cfg) == json.loads((ov.config_dir / names.STATE_FILE).read_text())


def test_digest_mismatch_compiles_the_yaml(fresh):
    ov = fresh("t4")
    cfg = ov.config_dir / names.PROFILE_FILE
    cfg.write_bytes(cfg.read_bytes().replace(b'name: "NVIDIA T4"', b'name: "NVIDIA T4 edited"'))
    st = core_state.load_for_config(str(cfg))
    assert st["gpus"][0]["name"] == "NVIDIA T4 edited"


def test_corrupt_state_beside_the_yaml_falls_back_to_compiling(fresh):
    ov = fresh("t4")
    (ov.config_dir / names.STATE_FILE).write_text('{"schema_version": 1, "gpus": [')
    st = core_state.load_for_config(str(ov.config_dir / names.PROFILE_FILE))
    assert st["gpu_count"] == 4


def test_corrupt_state_named_directly_is_one_clear_error(tmp_path):
    bad = tmp_path / names.STATE_FILE
    bad.write_text("{} trailing")
    with pytest.raises(core_state.StateError, match="not valid JSON"):
        core_state.load_for_config(str(bad))


def test_entry_point_location_finds_the_overlay_config(staged):
    ov = staged("t4")
    assert core_state.locate({}, ov.smi) == str(ov.config_dir / names.PROFILE_FILE)
