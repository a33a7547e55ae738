"""libibmockumad's tests rerun over its ASan + UBSan build (system gcc): every tool and
probe process preloads libasan first; a report aborts it and fails the test."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.native.conftest import REPO, SANITIZER_PRELOAD
from tests.native.test_sanitized import runtime

TESTS = ["test_umad_shim.py", "test_tools_real.py"]


def test_umad_shim_tests_run_clean_under_asan_and_ubsan(tmp_path):
    asan = runtime("libasan.so")
    assert asan, "gcc's libasan is missing (Debian: libasan8, which gcc-12 pulls in)"
    out = str(tmp_path / "sanitize-umad")
    done = subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"), "--sanitize",
                           "--out", out, "-q", "--lib", "ibmockumad"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    env = dict(os.environ)
    env.update({
        "MOKKA_SHIM_LIB_DIR": os.path.join(out, os.uname().machine),
        SANITIZER_PRELOAD: asan,
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:halt_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    })
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *[os.path.join(here, t) for t in TESTS]],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=1200)
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert " passed" in done.stdout and "AddressSanitizer" not in report and "runtime error:" not in report
