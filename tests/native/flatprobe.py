"""The companion format's C side as a process (tests/native/c/flatprobe.c): native/nvml/engine's
flat.c, regular.c, kinds.c, crc32.c and sha256.c built with the system gcc under ASan and UBSan,
so every load and write of the tests runs on the sanitizer build.

    flatprobe   (session)  the executable
    load(exe, kind, yaml, companion) -> Loaded(status, file, reason, pairs)
    batch(exe, kind, [(yaml, companion), ...]) -> [(status, file, reason), ...]   thousands a second
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import NamedTuple

import pytest

from tests.native.conftest import REPO

HERE = os.path.dirname(os.path.abspath(__file__))
NVML = os.path.join(REPO, "native", "nvml")
ENGINE = os.path.join(NVML, "engine")      # the format's C side is the engine's
SOURCES = ("flat.c", "regular.c", "kinds.c", "crc32.c", "sha256.c")
SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1:halt_on_error=1",
                 "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}


class Loaded(NamedTuple):
    status: str
    file: str              # "yaml" or "companion": which one failed
    reason: str
    pairs: list


@pytest.fixture(scope="session")
def flatprobe(tmp_path_factory) -> str:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the format probe (apt-get install gcc)")
    out = tmp_path_factory.mktemp("flatprobe")
    gen = out / "gen"
    for script in (os.path.join(REPO, "native", "gen_names.py"), os.path.join(NVML, "gen_keys.py")):
        subprocess.run([sys.executable, script, str(gen)], check=True)
    exe = str(out / "flatprobe")
    subprocess.run(["gcc", "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-omit-frame-pointer", "-I", ENGINE, "-I", str(gen), "-o", exe,
                    os.path.join(HERE, "c", "flatprobe.c"), *(os.path.join(ENGINE, s) for s in SOURCES),
                    "-lpthread"], check=True)
    return exe


def _run(args: list[str], stdin: str | None = None) -> str:
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **SANITIZER_ENV})
    assert done.returncode == 0 and not done.stderr, done.stderr[-4000:]
    return done.stdout


def load(exe: str, kind: str, yaml: str, companion: str) -> Loaded:
    lines = _run([exe, "load", kind, yaml, companion]).splitlines()
    status, file, reason, count = lines[0].split("\t")
    pairs = [tuple(bytes.fromhex(part).decode() for part in line.split("\t")) for line in lines[1:]]
    assert len(pairs) == int(count)
    return Loaded(status, file, reason, pairs)


def batch(exe: str, kind: str, files: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    text = "".join(f"{yaml}\t{companion}\n" for yaml, companion in files)
    rows = [tuple(line.split("\t")) for line in _run([exe, "batch", kind], text).splitlines()]
    assert len(rows) == len(files)
    return rows
