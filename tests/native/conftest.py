"""Fixtures for the mock libnvidia-ml.so.1: build it once, run probes against it.

    nvml_lib   (session)  the directory holding the built libnvidia-ml.so.1
    run_probe(lib_dir, env, *args, probe=PROBE)   python3 tests/native/probe.py ARGS as a
                          process that loads the library through LD_LIBRARY_PATH
                          with a clean environment (no MOCK_* of the caller)
"""

from __future__ import annotations

import importlib.util
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


def _build_module():
    spec = importlib.util.spec_from_file_location("mokka_native_build", os.path.join(REPO, "native", "build.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def nvml_lib(tmp_path_factory) -> str:
    """native/build.py for this machine (MOKKA_NVML_LIB_DIR reuses a prebuilt one)."""
    prebuilt = os.environ.get("MOKKA_NVML_LIB_DIR")
    if prebuilt:
        return prebuilt
    build = _build_module()
    out = str(tmp_path_factory.mktemp("native"))
    arch = build.host_arch()
    [library] = build.build(out, [arch], libraries=["nvml"])
    return os.path.dirname(library)


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
