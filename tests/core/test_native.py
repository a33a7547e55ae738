"""mokka.engine.native: where the built NVML library is found, package first."""

from __future__ import annotations

import os

import pytest

from mokka.engine import native
from tests.conftest import REPO


def _lib(root, *parts):
    path = root.joinpath(*parts, native.LIBRARY)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF")
    return str(path)


@pytest.fixture
def homes(tmp_path, monkeypatch):
    package, repo = tmp_path / "repo" / "mokka", tmp_path / "repo"
    package.mkdir(parents=True)
    monkeypatch.setattr(native, "_PACKAGE", str(package))
    monkeypatch.setattr(native, "_REPO", str(repo))
    return package, repo


def test_the_package_copy_wins_over_the_work_tree_build(homes):
    package, repo = homes
    carried = _lib(package, "_native", "aarch64")
    _lib(repo, "build", "native", "aarch64")
    assert native.nvml_library("aarch64") == carried


def test_the_work_tree_build_when_the_package_carries_none(homes):
    _, repo = homes
    built = _lib(repo, "build", "native", "x86_64")
    assert native.nvml_library("x86_64") == built


def test_none_when_absent_for_that_arch(homes):
    package, _ = homes
    _lib(package, "_native", "x86_64")
    assert native.nvml_library("aarch64") is None


def test_defaults_to_this_machines_arch(homes):
    package, _ = homes
    carried = _lib(package, "_native", os.uname().machine)
    assert native.nvml_library() == carried


def test_import_is_light():
    """The agent and render-cdi ask once at start: no YAML, click, json or subprocess."""
    import subprocess
    import sys
    code = ("import sys; import mokka.engine.native; "
            "print(sorted({'yaml', 'click', 'json', 'subprocess'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True).stdout
    assert out.strip() == "[]"
