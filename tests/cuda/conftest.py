"""Fixtures for the mock libcuda.so.1: build it beside the mock NVML library, run probes.

    cuda_lib   (session)  a directory holding libcuda.so.1 and libnvidia-ml.so.1, built or
                          found by tests/nativelibs.py (the sanitizer run,
                          tests/cuda/test_sanitized.py, points it at its own build)
    node(profile, tmp_path, **env) -> env of a process that sees a node of that profile
                          (tests/corpus/engine_cases.stage: MOCK_NVML_CONFIG, an empty /dev)
    run_cuda(lib_dir, env, *args) -> the JSON tests/cuda/probe.py printed; the probe drives
                          the driver through NVIDIA's cuda-bindings and NVML through pynvml
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.corpus import engine_cases as corpus
from tests.native.conftest import clean_env

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "probe.py")


@pytest.fixture(scope="session")
def cuda_lib(native_libs) -> str:
    """The folder holding the mock libcuda.so.1 beside the NVML library it reads."""
    return native_libs.folder("nvml", "cuda")


def node(profile: str, root, **env) -> dict:
    staged = corpus.stage(corpus.Case("cuda", profile, ()), str(root))
    staged.update({k: str(v) for k, v in env.items()})
    return staged


def cuda_env(lib_dir: str, env: dict) -> dict:
    full = clean_env(lib_dir, env)
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
        if name not in env:
            full.pop(name, None)
    return full


def run_cuda(lib_dir: str, env: dict, *args: str, timeout: float = 120) -> dict:
    done = subprocess.run([sys.executable, PROBE, *args], env=cuda_env(lib_dir, env), capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def start_cuda(lib_dir: str, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, PROBE, *args], env=cuda_env(lib_dir, env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
