"""A hostile mig.nvml never crashes or hangs a consumer: every mutation class of the
hostile-workload fuzz (truncation at every line boundary, byte flips, NULs, huge numbers,
huge counts, long lines, wrong digests, FIFOs, directories, symlinks), and files whose
digest is right but whose partitions no board can be in. A file that is not whole and
possible is ignored with one line naming it, and the partitions the profile boots with
apply until a MIG change writes a good file again.

Bounded and seeded: each consumer run has a timeout; the whole module takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import random
import subprocess

import pytest

from tests.native import mig_nodes as mn
from tests.native.conftest import clean_env

SEED = 23
HEADER = b"# mokka-nvml mig 1\n"
RUN_TIMEOUT = 20          # a consumer that hangs fails here (a healthy run takes well under a second)


def with_digest(body: bytes) -> bytes:
    """A file whose digest line is right for `body`: only its content can be wrong."""
    return HEADER + b"digest sha256:" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


@pytest.fixture(scope="module")
def node(nvml_lib, tmp_path_factory):
    """An h100 with partitions on GPU 0, and the bytes of its good mig.nvml."""
    env = mn.board(str(tmp_path_factory.mktemp("hostile")), "h100")
    mn.enable(nvml_lib, env)
    assert mn.nvidia_smi(nvml_lib, env, "mig", "-cgi", "19,14,9", "-C", "-i", "0").returncode == 0
    with open(mn.state_file(env), "rb") as f:
        good = f.read()
    return env, good, mn.probe(nvml_lib, env, "state")


def body_of(good: bytes) -> bytes:
    return good.split(b"\n", 2)[2]


def mutations(good: bytes) -> list:
    rng = random.Random(SEED)
    body = body_of(good)
    lines = good.splitlines(keepends=True)
    out = [(f"truncated after line {k}", b"".join(lines[:k])) for k in range(len(lines))]
    out += [("truncated mid-line", good[:len(good) // 2])]
    for k in range(8):
        at = rng.randrange(len(good))
        flipped = bytearray(good)
        flipped[at] ^= 1 << rng.randrange(8)
        out.append((f"byte {at} flipped", bytes(flipped)))
    out += [
        ("a NUL in a line", good.replace(b" 6:1", b" 6\0:1")),
        ("a NUL-filled file", b"\0" * 4096),
        ("an edited body, digest kept", good.replace(b" 6:1", b" 5:1")),
        ("a foreign digest", good.replace(good.split(b"\n")[1], b"digest sha256:" + b"0" * 64)),
        ("no digest", HEADER + body),
        ("another kind", good.replace(b"mig 1", b"state 1", 1)),
        ("a later version", good.replace(b"mig 1", b"mig 2", 1)),
        ("a long line", with_digest(b"gpu.0.uuid " + b"A" * 100_000 + b"\n")),
        ("over the size bound", with_digest(b"".join(b"gpu.0.gi.%d.ci.0 0 0:1\n" % k for k in range(20_000)))),
        ("a huge GPU index", with_digest(b"gpu.18446744073709551615.mode 1 1\n")),
        ("a GPU past the node's", with_digest(b"gpu.8.mode 1 1\n")),
        ("a huge profile ID", with_digest(b"gpu.0.gi.13 4294967296 6:1\ngpu.0.mode 1 1\n")),
        ("a huge GPU instance id", with_digest(b"gpu.0.gi.99999999999 19 6:1\ngpu.0.mode 1 1\n")),
        ("a mode past 1", with_digest(b"gpu.0.mode 7 1\n")),
        ("a negative start", with_digest(b"gpu.0.gi.13 19 -1:1\ngpu.0.mode 1 1\n")),
        ("an id its placement does not have", with_digest(b"gpu.0.gi.7 19 6:1\ngpu.0.mode 1 1\n")),
        ("overlapping instances", with_digest(b"gpu.0.gi.1 9 0:4\ngpu.0.gi.3 14 0:2\ngpu.0.mode 1 1\n")),
        ("more 1g instances than the profile", with_digest(
            b"".join(b"gpu.0.gi.%d 20 %d:1\n" % (7 + k, k) for k in range(2)) + b"gpu.0.mode 1 1\n")),
        ("instances while MIG is off", with_digest(b"gpu.0.gi.13 19 6:1\ngpu.0.mode 0 0\n")),
        ("a compute instance larger than its GPU instance", with_digest(
            b"gpu.0.gi.13 19 6:1\ngpu.0.gi.13.ci.0 2 0:3\ngpu.0.mode 1 1\n")),
        ("a compute instance of no GPU instance", with_digest(b"gpu.0.gi.13.ci.0 0 0:1\ngpu.0.mode 1 1\n")),
        ("keys out of order", with_digest(b"gpu.0.mode 1 1\ngpu.0.gi.13 19 6:1\n")),
        ("a key twice", with_digest(b"gpu.0.mode 1 1\ngpu.0.mode 1 1\n")),
        ("an unknown key", with_digest(b"gpu.0.colour blue\n")),
        ("another node's GPUs", with_digest(b"gpu.0.mode 1 1\ngpu.0.uuid GPU-99999999-0000-0000-0000-000000000000\n")),
    ]
    return out


def consume(nvml_lib, env) -> tuple:
    """(exit status, stderr, state) of a pynvml consumer and NVIDIA's nvidia-smi -L."""
    probe = subprocess.run([sys.executable, mn.PROBE, "state"], env=clean_env(nvml_lib, env),
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
    return probe.returncode, probe.stderr, probe.stdout


def test_every_hostile_file_is_ignored_with_one_line_and_never_crashes_a_consumer(node, nvml_lib):
    env, good, _ = node
    path = mn.state_file(env)
    for what, data in mutations(good):
        with open(path, "wb") as f:
            f.write(data)
        status, err, out = consume(nvml_lib, env)
        assert status == 0, (what, err[-2000:])
        refused = [ln for ln in err.splitlines() if ln.startswith("mock NVML:")]
        assert len(refused) == 1 and path in refused[0] and "ignoring" in refused[0], (what, err)
        gpu0 = json.loads(out)["gpus"][0]
        assert gpu0["mode"] == [0, 0] and gpu0["devices"] == [], what     # the boot state


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink", "link to /dev/zero"])
def test_what_is_not_a_regular_file_is_ignored_without_waiting(node, nvml_lib, kind):
    env, good, _ = node
    path = mn.state_file(env)
    os.unlink(path)
    elsewhere = path + ".elsewhere"
    with open(elsewhere, "wb") as f:
        f.write(good)
    {"fifo": lambda: os.mkfifo(path), "directory": lambda: os.mkdir(path),
     "symlink": lambda: os.symlink(elsewhere, path), "link to /dev/zero": lambda: os.symlink("/dev/zero", path),
     }[kind]()
    try:
        status, err, out = consume(nvml_lib, env)
        assert status == 0, err
        assert sum(ln.startswith("mock NVML: ignoring") for ln in err.splitlines()) == 1, err
        done = mn.nvidia_smi(nvml_lib, env, "-L", timeout=RUN_TIMEOUT)
        assert done.returncode == 0 and "MIG" not in done.stdout, done.stdout
    finally:
        (os.rmdir if kind == "directory" else os.unlink)(path)
        os.unlink(elsewhere)
        with open(path, "wb") as f:
            f.write(good)


def test_a_mig_change_rewrites_a_bad_file_whole(node, nvml_lib):
    env, good, _ = node
    path = mn.state_file(env)
    with open(path, "wb") as f:
        f.write(good[: len(good) // 3])
    assert mn.probe(nvml_lib, env, "create", "3", "19") == {"gi": ["err", mn.NOT_SUPPORTED]}   # MIG is off there
    enabled = mn.nvidia_smi(nvml_lib, env, "-i", "0", "-mig", "1")
    assert enabled.returncode == 0
    status, err, out = consume(nvml_lib, env)
    assert status == 0 and "mock NVML" not in err, err
    with open(path, "rb") as f:
        rewritten = f.read()
    assert rewritten.startswith(HEADER) and rewritten != good
    with open(path, "wb") as f:
        f.write(good)
