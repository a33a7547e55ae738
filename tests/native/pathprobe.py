"""The C consumer of the path shims (tests/native/c/pathprobe.c), built with the
system gcc in two flavours: fortified (__open_2, __openat_2, __readlink_chk,
__realpath_chk) and fortified with 64-bit offsets (open64, stat64, fopen64 ...).

    probes      (session)  {flavour: executable}
    report(exe, env, *paths, chdir=, dirfd=, cwd=)   every libc path call on every
                path: one {call: result} per path, in order
    no_shims()  the env of a run to compare with: no shim, as the shimmed runs otherwise
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.native.test_path_shims import preload, sanitizer_env

HERE = os.path.dirname(os.path.abspath(__file__))
FLAVOURS = {"fortify": ["-D_FORTIFY_SOURCE=2"],
            "fortify, 64-bit offsets": ["-D_FORTIFY_SOURCE=2", "-D_FILE_OFFSET_BITS=64"]}


@pytest.fixture(scope="session")
def probes(tmp_path_factory) -> dict[str, str]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the libc probe (apt-get install gcc)")
    out = tmp_path_factory.mktemp("pathprobe")
    built = {}
    for name, flags in FLAVOURS.items():
        exe = str(out / name.replace(",", "").replace(" ", "-"))
        subprocess.run(["gcc", "-O2", "-pthread", *flags, "-o", exe,
                        os.path.join(HERE, "c", "pathprobe.c")], check=True)
        built[name] = exe
    return built


def no_shims() -> dict:
    """The environment of a run without the shims: the sanitizer's runtime alone when
    test_sanitized.py reruns these tests (it changes how libc's crashes end)."""
    return {"LD_PRELOAD": preload()}


def run(exe: str, env: dict, *args: str, cwd: str | None = None) -> str:
    """The probe's stdout; only PATH, ``env`` and the sanitizer's options reach it."""
    done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={"PATH": os.environ["PATH"], **env, **sanitizer_env()})
    assert done.returncode == 0, done.stderr
    return done.stdout


def report(exe: str, env: dict, *paths: str, chdir: str = "-", dirfd: str = "-",
           cwd: str | None = None) -> list[dict[str, str]]:
    """Per path, {call: result}. ``chdir``/``dirfd`` are made by the probe itself,
    through the shims; ``cwd`` is the directory the probe starts in (no shim)."""
    assert len(set(paths)) == len(paths), paths
    rows: dict[str, dict[str, str]] = {path: {} for path in paths}
    for line in run(exe, env, "report", chdir, dirfd, *paths, cwd=cwd).splitlines():
        call, path, result = line.split("\t", 2)
        assert path in rows, line             # a failed chdir or dirfd names its directory
        rows[path][call] = result
    return [rows[path] for path in paths]
