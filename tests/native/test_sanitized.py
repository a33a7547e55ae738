"""The library's own tests, rerun over the ASan + UBSan build (system gcc).

Every probe process preloads the ASan runtime; UBSan halts on the first report,
and ASan aborts on any memory error, so a report fails the probe and with it the
test. Leak checking is off: the Python interpreter that hosts the probes keeps
memory until exit by design.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.native.conftest import REPO, SANITIZER_PRELOAD

LIBRARY_TESTS = ["test_engine_corpus.py", "test_fields.py", "test_threads.py", "test_errors.py",
                 "test_overrides_live.py", "test_processes_and_placement.py",
                 "test_fabric_state_dir.py", "test_xid_events.py", "test_dynamic.py"]


def runtime(name: str) -> str | None:
    path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


@pytest.fixture(scope="module")
def sanitized_lib(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("sanitize"))
    done = subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"), "--sanitize",
                           "--out", out, "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return os.path.join(out, os.uname().machine)


def test_library_tests_run_clean_under_asan_and_ubsan(sanitized_lib):
    asan = runtime("libasan.so")
    assert asan, "gcc's libasan is missing (Debian: libasan8, which gcc-12 pulls in)"
    env = dict(os.environ)
    env.update({
        "MOKKA_NVML_LIB_DIR": sanitized_lib,
        SANITIZER_PRELOAD: asan,
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:halt_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    })
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *[os.path.join(here, t) for t in LIBRARY_TESTS]],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=1200)
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert " passed" in done.stdout and "AddressSanitizer" not in report and "runtime error:" not in report


SHIM_TESTS = ["test_path_shims.py", "test_verbs_shim.py", "test_shim_libc_calls.py"]


def test_path_shim_tests_run_clean_under_asan_and_ubsan(tmp_path_factory):
    """The shims' own tests over the sanitizer build of the shims: every tool
    (ibstat, ibstatus, lspci, the shell) runs with libasan preloaded first."""
    asan = runtime("libasan.so")
    assert asan, "gcc's libasan is missing (Debian: libasan8, which gcc-12 pulls in)"
    out = str(tmp_path_factory.mktemp("sanitize-shims"))
    done = subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"), "--sanitize",
                           "--out", out, "-q", "--lib", "ibmocksys", "--lib", "mockfs",
                           "--lib", "ibmockverbs"],
                          capture_output=True, text=True)
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
                           *[os.path.join(here, t) for t in SHIM_TESTS]],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=1200)
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert " passed" in done.stdout and "AddressSanitizer" not in report and "runtime error:" not in report
