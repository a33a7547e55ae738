"""Fixtures for the mock libnvidia-ml.so.1: build it once, run probes against it.

    nvml_lib   (session)  the directory holding the built libnvidia-ml.so.1 (tests/nativelibs.py)
    run_probe(lib_dir, env, *args, probe=PROBE)   python3 tests/native/probe.py ARGS as a
                          process that loads the library through LD_LIBRARY_PATH
                          with a clean environment (no MOCK_* of the caller)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(HERE, "probe.py")
_STRIP = ("MOCK_", "NODE_NAME", "LD_PRELOAD", "LD_LIBRARY_PATH")
SANITIZER_PRELOAD = "MOKKA_NVML_TEST_PRELOAD"


@pytest.fixture(scope="session")
def nvml_lib(native_libs) -> str:
    """The folder holding libnvidia-ml.so.1 (tests/nativelibs.py)."""
    return native_libs.folder("nvml")


def clean_env(lib_dir: str, env: dict) -> dict:
    full = {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}
    full["LD_LIBRARY_PATH"] = lib_dir
    full["PYTHONPATH"] = REPO
    # test_sanitized.py reruns these tests over the ASan build: its runtime must be preloaded.
    preload = os.environ.get(SANITIZER_PRELOAD)
    if preload:
        full["LD_PRELOAD"] = preload
    full.update(env)
    return full


def run_probe(lib_dir: str, env: dict, *args: str, timeout: float = 60, probe: str = PROBE) -> tuple[dict, str]:
    """(the JSON the probe printed, its stderr); ``probe``: another probe script of this folder."""
    res = subprocess.run([sys.executable, probe, *args], env=clean_env(lib_dir, env),
                         capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), res.stderr


def start_probe(lib_dir: str, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, PROBE, *args], env=clean_env(lib_dir, env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
