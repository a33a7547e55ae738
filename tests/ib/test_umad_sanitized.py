"""libibmockumad's tests rerun over its ASan + UBSan build (tests/native/sanitized.py)."""

from __future__ import annotations

import os

from tests.native.sanitized import build, rerun

TESTS = ["test_umad_shim.py", "test_tools_real.py"]


def test_umad_shim_tests_run_clean_under_asan_and_ubsan(tmp_path):
    lib_dir = build(str(tmp_path / "sanitize-umad"), "ibmockumad")
    here = os.path.dirname(os.path.abspath(__file__))
    rerun([os.path.join(here, t) for t in TESTS], lib_dir)
