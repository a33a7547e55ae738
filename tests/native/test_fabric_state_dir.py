"""The library finds the fabricmanager state dir beside the driver root's config/, where
the agent stages both: no directory, no fabricmanager (auto is completed)."""

from __future__ import annotations

import os
import shutil

from mokka.core import names
from tests.corpus import engine_cases as corpus
from tests.native.conftest import run_probe


def _driver_root_with_library(nvml_lib, tmp_path):
    root = tmp_path / "overlay"
    lib_dir = root / names.DRIVER_LIB_DIR
    lib_dir.mkdir(parents=True)
    shutil.copy(os.path.join(nvml_lib, names.NVML_LIB_FILE), lib_dir)
    env = corpus.stage(corpus.Case("fabric", "h100", ()), str(tmp_path / "src"))
    shutil.copytree(os.path.dirname(env.pop(names.ENV_NVML_CONFIG)), root / names.DRIVER_CONFIG_DIR)
    return root, str(lib_dir), env


def _states(lib_dir, env) -> list:
    seen, stderr = run_probe(lib_dir, env, "visible")
    assert seen["init"] == 0 and stderr == ""
    return sorted({g["fabric"][0] for g in seen["gpus"]})


def test_state_dir_beside_the_config_drives_auto(nvml_lib, tmp_path):
    root, lib_dir, env = _driver_root_with_library(nvml_lib, tmp_path)
    assert _states(lib_dir, env) == ["completed"]
    state_dir = root / names.DRIVER_FABRIC_STATE_DIR
    state_dir.mkdir()
    assert _states(lib_dir, env) == ["in_progress"]
    (state_dir / names.FABRICMANAGER_READY).touch()
    assert _states(lib_dir, env) == ["completed"]


def test_relative_config_path_resolves_against_the_working_directory(nvml_lib, tmp_path, monkeypatch):
    root, lib_dir, env = _driver_root_with_library(nvml_lib, tmp_path)
    (root / names.DRIVER_FABRIC_STATE_DIR).mkdir()
    monkeypatch.chdir(root / names.DRIVER_DIR)    # the probe inherits it
    env[names.ENV_NVML_CONFIG] = os.path.join(names.DRIVER_CONFIG_NAME, names.PROFILE_FILE)
    assert _states(lib_dir, env) == ["in_progress"]


def test_variable_wins_over_the_state_dir_beside_the_config(nvml_lib, tmp_path):
    root, lib_dir, env = _driver_root_with_library(nvml_lib, tmp_path)
    (root / names.DRIVER_FABRIC_STATE_DIR).mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / names.FABRICMANAGER_READY).touch()
    env[names.ENV_FABRICMANAGER_STATE_DIR] = str(elsewhere)
    assert _states(lib_dir, env) == ["completed"]


def test_a_profile_outside_a_config_directory_has_no_state_dir_beside_it(nvml_lib, tmp_path):
    root, lib_dir, env = _driver_root_with_library(nvml_lib, tmp_path)
    (root / names.DRIVER_FABRIC_STATE_DIR).mkdir()             # not ready: in_progress, were it read
    elsewhere = root / names.DRIVER_DIR / "profiles"
    shutil.copytree(root / names.DRIVER_CONFIG_DIR, elsewhere)
    env[names.ENV_NVML_CONFIG] = str(elsewhere / names.PROFILE_FILE)
    assert _states(lib_dir, env) == ["completed"]
