"""The json-free loader agrees with mokka.core.state, and falls back when it must."""

from __future__ import annotations

import json

from mokka.core import names
from mokka.core import state as core_state
from mokka.smi import fastload


def test_staged_state_loads_identically(staged):
    ov = staged("gb200")
    cfg = str(ov.config_dir / names.PROFILE_FILE)
    assert fastload.load_for_config(cfg) == core_state.load_for_config(cfg) == json.loads(
        (ov.config_dir / names.STATE_FILE).read_text())


def test_digest_mismatch_compiles_the_yaml(fresh):
    ov = fresh("t4")
    cfg = ov.config_dir / names.PROFILE_FILE
    cfg.write_bytes(cfg.read_bytes().replace(b'name: "NVIDIA T4"', b'name: "NVIDIA T4 edited"'))
    st = fastload.load_for_config(str(cfg))
    assert st["gpus"][0]["name"] == "NVIDIA T4 edited"


def test_entry_point_location_finds_the_overlay_config(staged):
    ov = staged("t4")
    assert fastload.locate({}, ov.smi) == str(ov.config_dir / names.PROFILE_FILE)
