"""Shared fixtures: the built zipapp, and running Mokka as a real process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    subprocess.run([os.path.join(REPO, "shivfile"), out], check=True, capture_output=True)
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
