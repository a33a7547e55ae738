"""Shared fixtures (the native libraries, the built zipapp, running Mokka as a real
process) and the markers every test gets from where it lives (tests/README.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")

# Markers by folder and by a file name's suffix, so that `pytest -m "not slow"` is a loop of
# minutes. runtime: the real containerd (any test that asks for tests/integration's
# `runtime` fixture) or the image built from Debian's packages. process: starts Mokka, a
# probe or a peer as a real process. slow: a whole image or fresh-venv build, a rerun of
# other tests over a sanitizer build, a fuzz run, or a file that says it is slow itself.
RUNTIME_FOLDERS = {"integration", "image"}
PROCESS_FOLDERS = {"agent", "cuda", "demo", "docs", "ib", "image", "integration", "native", "setup"}
SLOW_FOLDERS = {"image", "integration", "setup"}
SLOW_SUFFIXES = ("_sanitized.py", "_fuzz.py")
PROCESS_SUFFIX = "_process.py"


def markers_of(relpath: str, fixtures) -> set[str]:
    """The markers of a test in ``relpath`` (under tests/) that uses ``fixtures``."""
    folder, _, rest = relpath.partition(os.sep)
    name = os.path.basename(relpath)
    marks = set()
    if folder in RUNTIME_FOLDERS or "runtime" in fixtures:
        marks |= {"runtime", "slow", "process"}
    if folder in PROCESS_FOLDERS or name.endswith(PROCESS_SUFFIX):
        marks.add("process")
    if folder in SLOW_FOLDERS or name.endswith(SLOW_SUFFIXES):
        marks.add("slow")
    return marks


def pytest_collection_modifyitems(config, items):
    for item in items:
        for mark in sorted(markers_of(os.path.relpath(str(item.path), TESTS), item.fixturenames)):
            item.add_marker(mark)


def pytest_sessionstart(session):
    """The checkout's own build/native, before any test is even collected: loading a
    profile with MIG layouts asks the library where the instances go, and the agent
    stages what that folder holds (native/build.py keeps what is up to date)."""
    from tests.nativelibs import NativeLibs, build_module
    NativeLibs().build(*build_module().LIBRARIES)


@pytest.fixture(scope="session")
def native_libs():
    """The native libraries, built once for this machine or found prebuilt (tests/nativelibs.py)."""
    from tests.nativelibs import NativeLibs
    return NativeLibs()


@pytest.fixture(scope="session")
def zipapp(tmp_path_factory) -> str:
    """dist/mokka as the README builds it (MOKKA_ZIPAPP reuses a prebuilt one)."""
    prebuilt = os.environ.get("MOKKA_ZIPAPP")
    if prebuilt:
        return prebuilt
    out = str(tmp_path_factory.mktemp("dist") / "mokka")
    # The Python running the tests builds it: it has the pins, whatever python3 is on PATH.
    subprocess.run([os.path.join(REPO, "shivfile"), "--quiet", out], check=True, capture_output=True,
                   env={**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)})
    return out


def run_mokka(*args: str, env: dict | None = None, check: bool = False,
              input: str | None = None) -> subprocess.CompletedProcess:
    """``python -m mokka ARGS`` from this checkout, as a real process."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = REPO + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "mokka", *args], capture_output=True,
                          text=True, env=full_env, check=check, input=input)


# The built image (image/build.sh), for tests anywhere: see tests/image/fixtures.py.
from tests.image.fixtures import mokka_image, mokka_image_arm64  # noqa: E402,F401


@pytest.fixture(scope="session")
def go_reader(tmp_path_factory) -> str:
    """The Go reader (tests/goreader), built once per session: its path."""
    from tests import goreader
    return goreader.build(str(tmp_path_factory.mktemp("goreader")))
