"""The profile's kernel modules: what a node loads by default, what the profile adds, the
/proc/modules lines they make, and an unknown name as one line at compile time."""

from __future__ import annotations

import json

import pytest

from mokka.core import kernelmodules as km
from tests.conftest import run_mokka
from tests.corpus.minimal_profile import DEFAULTS

HEAD = 'version: "1.0"\nsystem:\n  driver_version: "550.163.01"\n'


def compiled_modules(tmp_path, text: str) -> list[str]:
    path = tmp_path / "p.yaml"
    path.write_text(text + DEFAULTS)
    result = run_mokka("compile", "--profile", str(path))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["system"]["kernel_modules"]


def test_every_node_loads_the_three_driver_modules(tmp_path):
    assert compiled_modules(tmp_path, HEAD) == ["nvidia", "nvidia_modeset", "nvidia_uvm"]


def test_infiniband_loads_mlx5_core_before_the_driver(tmp_path):
    assert compiled_modules(tmp_path, HEAD + "infiniband: {enabled: true}\n") == [
        "mlx5_core", "nvidia", "nvidia_modeset", "nvidia_uvm"]


def test_declared_modules_are_added_in_load_order(tmp_path):
    text = HEAD + "  kernel_modules: [nvidia_fs, GDRDRV, nvidia_drm, nvidia_peermem, nvidia]\n"
    assert compiled_modules(tmp_path, text) == [
        "nvidia", "nvidia_modeset", "nvidia_uvm", "nvidia_drm", "nvidia_peermem", "gdrdrv",
        "nvidia_fs"]


def test_the_builtin_h100_loads_mlx5_core():
    result = run_mokka("compile", "--profile", "h100")
    assert json.loads(result.stdout)["system"]["kernel_modules"] == [
        "mlx5_core", "nvidia", "nvidia_modeset", "nvidia_uvm"]


def test_proc_modules_lists_the_last_loaded_first_with_its_users():
    modules = km.loaded(["nvidia_drm", "nvidia_peermem"], infiniband=True)
    assert km.proc_modules(modules) == (
        "nvidia_peermem 16384 0 - Live 0x0000000000000000\n"
        "nvidia_drm 126976 0 - Live 0x0000000000000000\n"
        "nvidia_uvm 1540096 0 - Live 0x0000000000000000\n"
        "nvidia_modeset 1306624 1 nvidia_drm, Live 0x0000000000000000\n"
        "nvidia 56954880 3 nvidia_peermem,nvidia_uvm,nvidia_modeset, Live 0x0000000000000000\n"
        "mlx5_core 2453504 0 - Live 0x0000000000000000\n")


def test_versions_are_the_drivers_for_nvidias_modules():
    assert km.version("nvidia_peermem", "570.86.15") == "570.86.15"
    assert km.version("mlx5_core", "570.86.15") == "24.10-1.1.4"


@pytest.mark.parametrize("text,words", [
    (HEAD + "  kernel_modules: [gdrdrv, nvidia-fs]\n",
     "system.kernel_modules[1]: unknown kernel module 'nvidia-fs'; use one of gdrdrv, mlx5_core, "
     "nvidia, nvidia_drm, nvidia_fs, nvidia_modeset, nvidia_peermem, nvidia_uvm"),
    (HEAD + "  kernel_modules: gdrdrv\n", "system.kernel_modules: must be a list, not a string ('gdrdrv')"),
], ids=["unknown name", "a string, not a list"])
def test_a_bad_module_declaration_is_one_line_naming_key_and_known_names(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = run_mokka("compile", "--profile", str(path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") <= 1
    assert result.stderr.strip() == f"compile: {path}: {words}"
