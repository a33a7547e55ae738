"""Rerun a set of native tests over the ASan + UBSan build (system gcc).

Every process those tests start preloads the ASan runtime (conftest's
SANITIZER_PRELOAD); UBSan halts on the first report and ASan aborts on any
memory error, so a report fails the process and with it the test. Leak checking
is off: the Python interpreters that host the probes keep memory until exit.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.native.conftest import REPO, SANITIZER_PRELOAD
from tests.nativelibs import PREBUILT_ENV


def runtime(name: str) -> str | None:
    path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


def build(out: str, *libs: str) -> str:
    """The sanitizer build of ``libs`` (all when none) into ``out``; its arch folder."""
    args = [a for lib in libs for a in ("--lib", lib)]
    done = subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"), "--sanitize",
                           "--out", out, "-q", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return os.path.join(out, os.uname().machine)


def rerun(test_files: list[str], lib_dir: str, keyword: str = "") -> None:
    """Run ``test_files`` (those of their tests ``keyword`` selects, as pytest's -k, when
    given) in a pytest process over the build in ``lib_dir`` (the libraries it holds are the
    ones tests/nativelibs.py hands them); assert clean."""
    asan = runtime("libasan.so")
    assert asan, "gcc's libasan is missing (Debian: libasan8, which gcc-12 pulls in)"
    env = dict(os.environ)
    env.update({
        PREBUILT_ENV: lib_dir,
        SANITIZER_PRELOAD: asan,
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:halt_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    })
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *test_files, *(("-k", keyword) if keyword else ())],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=1200)
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert " passed" in done.stdout and "AddressSanitizer" not in report and "runtime error:" not in report
