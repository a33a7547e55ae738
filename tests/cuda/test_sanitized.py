"""The mock CUDA driver's tests, rerun over the ASan + UBSan builds of it and of the mock
NVML library it reads (tests/native/sanitized.py)."""

from __future__ import annotations

import os

from tests.native.sanitized import build, rerun

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER_TESTS = ["test_memory.py", "test_visibility.py", "test_processes.py", "test_entry_points.py",
                "test_link.py", "test_accounting.py"]


def test_driver_tests_run_clean_under_asan_and_ubsan(tmp_path):
    lib_dir = build(str(tmp_path / "sanitize"), "nvml", "cuda")
    rerun([os.path.join(HERE, t) for t in DRIVER_TESTS], lib_dir)
