"""A hostile settings.nvml never crashes, hangs or misleads a consumer: truncated at every
line, bytes flipped, NULs, a digest of other bytes, files whose digest is right but whose
settings no board can have (a power limit past the board's, clocks it does not support,
another node's GPUs, ECC counts at a clearing that are not 16 counts, NVLink counters at a
reset that are not 5 counts of a link there can be), huge numbers and
files, and FIFOs, directories and links in the file's place (never followed, never waited
on). Such a file is ignored with one line naming it, every reading is the board's own, and
the next setter writes a good file whole.

Bounded and seeded: each consumer run has a timeout; the whole module takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import pytest

from tests.native import mig_nodes as mn
from tests.native.conftest import HERE, clean_env

SEED = 36
PROBE = os.path.join(HERE, "probe_settings.py")
HEADER = b"# mokka-nvml settings 1\n"
RUN_TIMEOUT = 20          # a consumer that hangs fails here (a healthy run takes well under a second)
UUID0 = b"GPU-01000100-0000-0000-0000-000000000000"     # the h100 profile's GPU 0


def with_digest(body: bytes) -> bytes:
    """A file whose digest line is right for `body`: only its content can be wrong."""
    return HEADER + b"digest sha256:" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def run(nvml_lib, env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, PROBE, *args], env=clean_env(nvml_lib, env), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT)


@pytest.fixture(scope="module")
def node(nvml_lib, tmp_path_factory):
    """An h100 whose GPU 0 was set to 300 W, and the bytes of that good settings.nvml."""
    env = mn.board(str(tmp_path_factory.mktemp("hostile")), "h100")
    assert run(nvml_lib, env, "set", "0", "SetPowerManagementLimit", "300000").stdout == "0\n"
    path = settings_file(env)
    with open(path, "rb") as f:
        good = f.read()
    assert good == with_digest(b"gpu.0.power_limit_mw 300000\ngpu.0.uuid " + UUID0 + b"\n")
    return env, good


def settings_file(env) -> str:
    return os.path.join(os.path.dirname(mn.state_file(env)), "settings.nvml")


def mutations(good: bytes) -> list:
    rng = random.Random(SEED)
    lines = good.splitlines(keepends=True)
    out = [(f"truncated after line {k}", b"".join(lines[:k])) for k in range(1, len(lines))]
    out += [("truncated mid-line", good[:len(good) - 7])]
    for _ in range(6):
        at = rng.randrange(len(good))
        flipped = bytearray(good)
        flipped[at] ^= 1 << rng.randrange(8)
        out.append((f"byte {at} flipped", bytes(flipped)))
    uuid = b"gpu.0.uuid " + UUID0 + b"\n"
    out += [
        ("a NUL in a line", good.replace(b"300000", b"300\0000")),
        ("a NUL-filled file", b"\0" * 4096),
        ("an edited body, digest kept", good.replace(b"300000", b"250000")),
        ("no digest", HEADER + good.split(b"\n", 2)[2]),
        ("another kind", good.replace(b"settings 1", b"mig 1", 1)),
        ("a later version", good.replace(b"settings 1", b"settings 2", 1)),
        ("a long line", with_digest(b"gpu.0.uuid " + b"A" * 100_000 + b"\n")),
        ("over the size bound", with_digest(b"".join(b"gpu.0.power_limit_mw%06d 1\n" % k for k in range(10000)))),
        ("a huge GPU index", with_digest(b"gpu.18446744073709551615.power_limit_mw 300000\n")),
        ("a GPU past the node's", with_digest(b"gpu.8.power_limit_mw 300000\n")),
        ("a power limit past the board's", with_digest(b"gpu.0.power_limit_mw 900000\n" + uuid)),
        ("a power limit below the board's", with_digest(b"gpu.0.power_limit_mw 1\n" + uuid)),
        ("a power limit of 2^32 mW", with_digest(b"gpu.0.power_limit_mw 4294967296\n")),
        ("a negative power limit", with_digest(b"gpu.0.power_limit_mw -300000\n")),
        ("a power limit of 0", with_digest(b"gpu.0.power_limit_mw 0\n")),
        ("a compute mode past 3", with_digest(b"gpu.0.compute_mode 9\n")),
        ("an ECC mode of 2", with_digest(b"gpu.0.ecc 2 0\n")),
        ("one ECC mode", with_digest(b"gpu.0.ecc 1\n")),
        ("clocks the board does not support", with_digest(b"gpu.0.applications_clocks 2619 1411\n")),
        ("locked clocks upside down", with_digest(b"gpu.0.locked_clocks 1500 1000\n")),
        ("locked clocks past the board's", with_digest(b"gpu.0.locked_clocks 1000 99999\n")),
        ("a persistence mode of 7", with_digest(b"gpu.0.persistence 7\n")),
        ("an accounting mode of 3", with_digest(b"gpu.0.accounting 3\n")),
        ("an application clocks restriction of 2", with_digest(b"gpu.0.applications_clocks_restricted 2\n")),
        ("a restriction with a sign", with_digest(b"gpu.0.applications_clocks_restricted +0\n")),
        ("15 ECC counts at a clearing", with_digest(b"gpu.0.ecc_cleared_volatile" + b" 0" * 15 + b"\n")),
        ("17 ECC counts at a clearing", with_digest(b"gpu.0.ecc_cleared_volatile" + b" 0" * 17 + b"\n")),
        ("an ECC count of 2^32", with_digest(b"gpu.0.ecc_cleared_aggregate 4294967296" + b" 0" * 15 + b"\n")),
        ("a negative ECC count", with_digest(b"gpu.0.ecc_cleared_aggregate -1" + b" 0" * 15 + b"\n")),
        ("ECC counts two spaces apart", with_digest(b"gpu.0.ecc_cleared_volatile 0 " + b" 0" * 15 + b"\n")),
        ("ECC counts and a trailing space", with_digest(b"gpu.0.ecc_cleared_volatile" + b" 0" * 16 + b" \n")),
        ("4 NVLink counts at a reset", with_digest(b"gpu.0.nvlink_errors_cleared.2" + b" 1" * 4 + b"\n")),
        ("6 NVLink counts at a reset", with_digest(b"gpu.0.nvlink_errors_cleared.2" + b" 1" * 6 + b"\n")),
        ("an NVLink past any GPU's", with_digest(b"gpu.0.nvlink_errors_cleared.18" + b" 1" * 5 + b"\n")),
        ("an NVLink with no number", with_digest(b"gpu.0.nvlink_errors_cleared." + b" 1" * 5 + b"\n")),
        ("an NVLink count of 2^64", with_digest(b"gpu.0.nvlink_errors_cleared.2 18446744073709551616"
                                               + b" 0" * 4 + b"\n")),
        ("an NVLink count of 21 digits", with_digest(b"gpu.0.nvlink_errors_cleared.2 000000000000000000001"
                                                     + b" 0" * 4 + b"\n")),
        ("a negative NVLink count", with_digest(b"gpu.0.nvlink_errors_cleared.2 -1" + b" 0" * 4 + b"\n")),
        ("an NVLink reset of nothing", with_digest(b"gpu.0.nvlink_errors_cleared.2" + b" 0" * 5 + b"\n")),
        ("keys out of order", with_digest(b"gpu.0.uuid " + UUID0 + b"\ngpu.0.power_limit_mw 300000\n")),
        ("a key twice", with_digest(b"gpu.0.power_limit_mw 300000\ngpu.0.power_limit_mw 300000\n")),
        ("an unknown key", with_digest(b"gpu.0.colour blue\n")),
        ("a value with a format", with_digest(b"gpu.0.power_limit_mw %s%n\n")),
        ("another node's GPUs", with_digest(
            b"gpu.0.power_limit_mw 300000\ngpu.0.uuid GPU-99999999-0000-0000-0000-000000000000\n")),
    ]
    return out


def test_every_hostile_file_is_ignored_with_one_line_and_the_boards_readings_apply(node, nvml_lib):
    env, good = node
    path = settings_file(env)
    for what, data in mutations(good):
        with open(path, "wb") as f:
            f.write(data)
        done = run(nvml_lib, env, "read", "0")
        assert done.returncode == 0, (what, done.stderr[-2000:])
        said = done.stderr.splitlines()
        assert len(said) == 1 and said[0].startswith(f"mock NVML: ignoring {path}: it "), (what, done.stderr)
        reading = json.loads(done.stdout)
        assert (reading["power_limit"], reading["compute_mode"], reading["graphics"],
                reading["app_clocks_restricted"]) == (700000, 0, 345, 1), what
    with open(path, "wb") as f:
        f.write(good)


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink to a good file", "link to /dev/zero"])
def test_what_is_not_a_regular_file_is_never_followed_nor_waited_on(node, nvml_lib, kind):
    env, good = node
    path = settings_file(env)
    os.unlink(path)
    elsewhere = path + ".elsewhere"
    with open(elsewhere, "wb") as f:
        f.write(good)
    {"fifo": lambda: os.mkfifo(path), "directory": lambda: os.mkdir(path),
     "symlink to a good file": lambda: os.symlink(elsewhere, path),
     "link to /dev/zero": lambda: os.symlink("/dev/zero", path)}[kind]()
    try:
        done = run(nvml_lib, env, "read", "0")
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("mock NVML: ignoring") == 1, done.stderr
        assert json.loads(done.stdout)["power_limit"] == 700000            # the good file's 300 W: not followed
    finally:
        (os.rmdir if kind == "directory" else os.unlink)(path)
        os.unlink(elsewhere)
        with open(path, "wb") as f:
            f.write(good)


def test_a_setter_rewrites_a_bad_file_whole(node, nvml_lib):
    env, good = node
    path = settings_file(env)
    with open(path, "wb") as f:
        f.write(good[: len(good) // 2])
    assert run(nvml_lib, env, "set", "0", "SetComputeMode", "3").stdout == "0\n"
    with open(path, "rb") as f:
        assert f.read() == with_digest(b"gpu.0.compute_mode 3\ngpu.0.uuid " + UUID0 + b"\n")
    done = run(nvml_lib, env, "read", "0")
    assert done.stderr == "" and json.loads(done.stdout)["power_limit"] == 700000
    with open(path, "wb") as f:
        f.write(good)
