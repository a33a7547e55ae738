"""A seeded, bounded fuzz of every file a workload can write in driver/config, against real
consumers on the ASan + UBSan build: pynvml (tests/native/probe.py survey, each case a process
forked from an interpreter that has pynvml imported and no library loaded: hostile.Surveys) for
every case, NVIDIA's nvidia-smi 550 for a sample.

Each case copies a staged node's config directory (the profile, two overrides scopes,
the Xid events; each YAML with its companion), spoils one file with
one mutation class, and runs one consumer with a 2 s timeout. Every run must end (no
hang past 2 s: a case that times out is run once more, so a busy machine is not taken
for a hang), exit cleanly (no crash, no sanitizer report), print only one-line warnings
and none twice, answer with the node or a clean NVML error, and keep its peak RSS
(VmHWM, from wait4) within RSS_GROWTH of the unspoilt node's.

Classes: truncation at a line boundary, byte flips, NULs, a digest of other bytes, and,
restated so that they pass the companion's own checksum and reach the library's
checks and queries, huge numbers, huge list counts, long lines and odd values; then
FIFOs, directories, symbolic links, empty and sparse huge files in a file's place, the
overrides directory replaced, and flocks held on everything while the consumer runs.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import json
import os
import queue
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.native.conftest import REPO, clean_env
from tests.native.hostile import (OVERRIDDEN, TIMEOUT_S, Run, Surveys, answered, node_env, restated,
                                 stage_node)
from tests.native.sanitized import runtime
from tests.peers import peer

SEED = 22
#: A consumer may hold one document at its kind's bound and its index; more than this
#: over the unspoilt node means a reader allocated from a number it read.
RSS_GROWTH = 48 << 20
DRIVER_NOT_LOADED = 9
GPUS = 2
NVIDIA_SMI_SAMPLE = 12
WORKERS = 2

COMPANIONS = ("config.nvml", "overrides/all.nvml", "overrides/gpu1.nvml", "xid-events.nvml")
YAMLS = tuple(c[:-len(".nvml")] + ".yaml" for c in COMPANIONS)
HUGE_NUMBERS = ("18446744073709551615", "18446744073709551616", "99999999999999999999999999", "-1",
                "-9223372036854775808", "1e308", "nan", "inf", "0", "4294967296")
HUGE_COUNTS = ("2147483648", "1048576", "18446744073709551615", "4294967296", "65", "19", "1025")
ODD_VALUES = ("", "%s%s%n", "N/A", "é" * 200, "0-18446744073709551615", "18446744073709551615", "-", ",",
              "1,2-", "0-8191,0-8191,0-8191", "GPU-", "00000000:ZZ:00.0", "true" * 100)


# --- the node every case starts from ----------------------------------------------------

@pytest.fixture(scope="module")
def sanitized_nvml() -> str:
    done = subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"), "--sanitize", "-q",
                           "--lib", "nvml"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    asan = runtime("libasan.so")
    assert asan, "gcc's libasan is missing (Debian: libasan8, which gcc-12 pulls in)"
    return os.path.join(REPO, "build", "native-sanitize", os.uname().machine)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> str:
    """A node's config directory with every document a workload can write."""
    return stage_node(str(tmp_path_factory.mktemp("fuzz-template")), GPUS)


# --- mutations ------------------------------------------------------------------------

def _body_lines(data: bytes) -> list[bytes]:
    return data.split(b"\n", 3)[3].split(b"\n")[:-1]


def _set_value(data: bytes, rng: random.Random, pick, values) -> bytes:
    lines = _body_lines(data)
    chosen = [i for i, line in enumerate(lines) if pick(line)] or list(range(len(lines)))
    at = rng.choice(chosen)
    key = lines[at].split(b" ", 1)[0]
    lines[at] = key + b" " + rng.choice(values).encode() if not callable(values) else key + b" " + values(rng)
    return restated(data, b"\n".join(lines) + b"\n")


def huge_number(data, rng):
    return _set_value(data, rng, lambda line: re.fullmatch(rb"\S+ \d+", line) is not None, HUGE_NUMBERS)


def huge_count(data, rng):
    return _set_value(data, rng, lambda line: line.split(b" ", 1)[0].endswith(b".len"), HUGE_COUNTS)


def long_line(data, rng):
    return _set_value(data, rng, lambda line: True, lambda r: b"x" * r.choice((4096, 60_000, 1 << 20)))


def odd_value(data, rng):
    return _set_value(data, rng, lambda line: True, ODD_VALUES)


def cut_at_a_line(data, rng):
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    return data[:rng.choice(ends[:-1] or [0])]


def flip_bytes(data, rng):
    out = bytearray(data)
    for _ in range(rng.choice((1, 2, 8))):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def nul_bytes(data, rng):
    at = rng.randrange(len(data))
    return data[:at] + b"\0" * rng.choice((1, 7)) + data[at:]


def other_digest(data, rng):
    lines = data.split(b"\n", 2)
    return b"\n".join([lines[0], rng.choice([b"digest sha256:" + b"ab" * 32, b"digest none", b"digest "]),
                       lines[2]])


CONTENT = {"huge number": huge_number, "huge count": huge_count, "long line": long_line,
           "odd value": odd_value}
RAW = {"cut at a line": cut_at_a_line, "flipped bytes": flip_bytes, "NUL bytes": nul_bytes}


def _replace(path: str, make) -> None:
    os.unlink(path)
    make(path)


FILE_KINDS = {
    "a FIFO": lambda p: _replace(p, os.mkfifo),
    "a directory": lambda p: _replace(p, os.mkdir),
    "a link to a good copy": lambda p: (os.replace(p, p + ".real"), os.symlink(os.path.basename(p) + ".real", p)),
    "a link to /dev/zero": lambda p: _replace(p, lambda q: os.symlink("/dev/zero", q)),
    "a dangling link": lambda p: _replace(p, lambda q: os.symlink("nowhere", q)),
    "an empty file": lambda p: open(p, "wb").close(),
    "a sparse 300 MiB file": lambda p: os.truncate(p, 300 << 20),
}


@dataclass(frozen=True)
class Case:
    file: str
    spoil: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.file}: {self.spoil} #{self.seed}"


def cases() -> list[Case]:
    out = []
    for file in COMPANIONS:
        for spoil in CONTENT:
            out += [Case(file, spoil, n) for n in range(3)]
        for spoil in RAW:
            out.append(Case(file, spoil, 0))
        out.append(Case(file, "a digest of other bytes", 0))
    for file in COMPANIONS + YAMLS:
        out += [Case(file, kind, 0) for kind in FILE_KINDS]
    for file in YAMLS:
        out += [Case(file, spoil, 0) for spoil in RAW]
    for kind in ("a FIFO", "a dangling link", "an empty file"):
        out.append(Case("overrides", kind + " for the directory", 0))
    out.append(Case("overrides", "a link to another directory", 0))
    out.append(Case("every file", "flocks held", 0))
    return out


def spoil(config_dir: str, case: Case) -> None:
    rng = random.Random(f"{SEED}:{case.id}")
    path = os.path.join(config_dir, case.file)
    if case.spoil in CONTENT or case.spoil in RAW or case.spoil == "a digest of other bytes":
        data = open(path, "rb").read()
        change = CONTENT.get(case.spoil) or RAW.get(case.spoil) or other_digest
        data = change(data, rng)
        os.unlink(path)
        with open(path, "wb") as f:
            f.write(data)
    elif case.spoil in FILE_KINDS:
        FILE_KINDS[case.spoil](path)
    elif case.spoil.endswith(" for the directory"):
        shutil.rmtree(path)
        kind = case.spoil[:-len(" for the directory")]
        {"a FIFO": os.mkfifo, "a dangling link": lambda q: os.symlink("nowhere", q),
         "an empty file": lambda q: open(q, "wb").close()}[kind](path)
    elif case.spoil == "a link to another directory":
        os.replace(path, path + ".elsewhere")
        os.symlink(os.path.basename(path) + ".elsewhere", path)


def _hold_flocks(config_dir: str) -> list[int]:
    fds = []
    for base, dirs, files in os.walk(config_dir):
        for name in [".", *files]:
            fd = os.open(os.path.join(base, name), os.O_RDONLY | os.O_NONBLOCK)
            fcntl.flock(fd, fcntl.LOCK_EX)
            fds.append(fd)
    return fds


# --- running a consumer ---------------------------------------------------------------

def sanitized_env(lib_dir: str) -> dict:
    env = clean_env(lib_dir, {})
    env["LD_PRELOAD"] = runtime("libasan.so")
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1:halt_on_error=1"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    return env


@pytest.fixture
def surveys(sanitized_nvml):
    """One forking pynvml consumer per worker (hostile.Surveys)."""
    servers = [Surveys(sanitized_env(sanitized_nvml)) for _ in range(WORKERS)]
    pool = queue.SimpleQueue()
    for server in servers:
        pool.put(server)
    yield pool
    for server in servers:
        server.close()


def spoilt_node(template: str, scratch: str, case: Case, consumer: str) -> str:
    """A copy of the template in its own directory with ``case`` done to it; its config dir."""
    run_dir = os.path.join(scratch, re.sub(r"[^\w.-]+", "_", case.id) + "_" + consumer)
    config_dir = os.path.join(run_dir, "config")
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(template, config_dir, symlinks=True)
    os.symlink(os.path.join(os.path.dirname(template), "devroot"), os.path.join(run_dir, "devroot"))
    if case.spoil != "flocks held":
        spoil(config_dir, case)
    return config_dir


@contextlib.contextmanager
def held(config_dir: str, case: Case):
    fds = _hold_flocks(config_dir) if case.spoil == "flocks held" else []
    try:
        yield
    finally:
        for fd in fds:
            os.close(fd)


def surveyed(surveys, template: str, scratch: str, case: Case) -> Run:
    config_dir = spoilt_node(template, scratch, case, "survey")
    server = surveys.get()
    try:
        with held(config_dir, case):
            return server.answered(node_env(config_dir), os.path.dirname(config_dir))
    finally:
        surveys.put(server)


def run_nvidia_smi(lib_dir: str, template: str, scratch: str, case: Case, smi: str) -> Run:
    config_dir = spoilt_node(template, scratch, case, "nvidia-smi")
    env = dict(sanitized_env(lib_dir), **node_env(config_dir))
    with held(config_dir, case):
        return answered([smi, "-q"], env)


def must_be_refused(case: Case) -> bool:
    """A companion spoilt as no writer leaves one, or any file that is no regular file
    (a blank YAML is a document with nothing in it; a restated value may be one a GPU has)."""
    if case.file in COMPANIONS:
        return case.spoil in RAW or case.spoil in FILE_KINDS
    return case.file in YAMLS and case.spoil in FILE_KINDS and case.spoil != "an empty file"


def problems(case: Case, run: Run, baseline_rss: int, nvidia: bool = False) -> list[str]:
    found = []
    if run.returncode is None:
        return [f"{case.id}: no answer within {TIMEOUT_S} s (twice)"]
    if "AddressSanitizer" in run.stderr or "runtime error:" in run.stderr or run.returncode < 0:
        return [f"{case.id}: crashed ({run.returncode}): {run.stderr[-3000:]}"]
    ours = [line for line in run.stderr.splitlines() if line.startswith("mock NVML: ")]
    if len(ours) != len(set(ours)):
        found.append(f"{case.id}: a warning printed twice: {ours}")
    if not nvidia:
        if run.returncode != 0 or len(ours) != len(run.stderr.splitlines()):
            found.append(f"{case.id}: exit {run.returncode}, stderr {run.stderr[-2000:]}")
        else:
            seen = json.loads(run.stdout.splitlines()[-1])
            if seen["init"] not in (0, DRIVER_NOT_LOADED) or (seen["init"] == 0 and len(seen["gpus"]) != GPUS):
                found.append(f"{case.id}: answered {run.stdout[:300]}")
            if seen["init"] == DRIVER_NOT_LOADED and len(ours) != 1:
                found.append(f"{case.id}: init failed with {len(ours)} lines: {ours}")
    if run.max_rss > baseline_rss + RSS_GROWTH:
        found.append(f"{case.id}: peak RSS {run.max_rss >> 20} MiB, the node's {baseline_rss >> 20} MiB")
    return found


def test_every_spoilt_file_leaves_pynvml_answering_within_bounds(surveys, template, tmp_path):
    clean = Case("nothing", "unspoilt", 0)
    baseline = [surveyed(surveys, template, str(tmp_path), clean) for _ in range(2)]
    assert all(r.returncode == 0 and r.stderr == "" for r in baseline), baseline[0].stderr
    assert json.loads(baseline[0].stdout.splitlines()[-1])["gpus"][1]["Name"] == OVERRIDDEN
    base_rss = max(r.max_rss for r in baseline)
    all_cases = cases()
    assert len(all_cases) > 120
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        runs = list(pool.map(lambda c: (c, surveyed(surveys, template, str(tmp_path), c)), all_cases))
    found = [p for case, run in runs for p in problems(case, run, base_rss)]
    found += [f"{case.id}: used without a word" for case, run in runs if must_be_refused(case) and not run.stderr]
    assert not found, "\n".join(found[:20])


def test_a_sample_leaves_nvidia_smi_550_answering(sanitized_nvml, template, tmp_path):
    smi = peer("NVIDIA_SMI")
    sample = random.Random(SEED).sample(cases(), NVIDIA_SMI_SAMPLE)
    clean = run_nvidia_smi(sanitized_nvml, template, str(tmp_path), Case("nothing", "unspoilt", 0), smi)
    assert clean.returncode == 0 and OVERRIDDEN in clean.stdout, clean.stderr
    found = []
    for case in sample:
        run = run_nvidia_smi(sanitized_nvml, template, str(tmp_path), case, smi)
        found += problems(case, run, clean.max_rss, nvidia=True)
    assert not found, "\n".join(found)
