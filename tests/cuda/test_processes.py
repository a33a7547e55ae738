"""One picture of memory: a CUDA process's allocations are in NVML's process list and
memory used for every process of the node, cuMemGetInfo counts every process's, and a
process that dies (SIGKILL included) is gone at once. The records are hostile input."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct

import pytest

from mokka.core import names
from tests.cuda.conftest import node, run_cuda, start_cuda

GiB = 1 << 30
#: h100: 80 GiB, 1 GiB reserved by the driver.
H100_USABLE = 85899345920 - 1073741824
F_OFD_SETLK = 37


@pytest.fixture
def h100(tmp_path):
    return node("h100", tmp_path)


def records_dir(env) -> str:
    return os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), names.PROCESS_RECORDS_DIR)


def own_records(env) -> str:
    """This user's directory of records (made as the library makes it)."""
    path = os.path.join(records_dir(env), str(os.geteuid()))
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o755)
    return path


class Holder:
    """A process holding memory on a GPU through the driver until stopped."""

    def __init__(self, lib, env, device: int | str, size: int):
        self.proc = start_cuda(lib, env, "hold", str(device), str(size))
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read()
        self.pid = json.loads(line)["pid"]
        self.free = json.loads(line)["free"]

    def release(self) -> None:
        self.proc.stdin.write("done\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout=60) == 0, self.proc.stderr.read()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)


@pytest.fixture
def holders():
    started: list[Holder] = []
    yield started
    for h in started:
        if h.proc.poll() is None:
            h.kill()


def nvml(lib, env) -> list:
    return run_cuda(lib, env, "nvml")["nvml"]


def test_a_process_holding_memory_is_in_every_process_nvml_and_cuda(cuda_lib, h100, holders):
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    holder = holders[0]
    assert holder.free == H100_USABLE - GiB                    # its own view
    seen = run_cuda(cuda_lib, h100, "meminfo", "0")
    assert seen["free"] == H100_USABLE - GiB                   # another process's cuMemGetInfo
    gpu0, gpu1 = seen["nvml"][0], seen["nvml"][1]
    # ... and its own context, which holds nothing yet, is a process of the GPU too
    assert sorted(gpu0["processes"]) == sorted([[holder.pid, GiB], [seen["pid"], 0]])
    assert (gpu0["used"], gpu0["free"]) == (GiB, H100_USABLE - GiB)
    assert (gpu1["processes"], gpu1["used"]) == ([], 0)


def test_every_process_on_a_gpu_is_counted(cuda_lib, h100, holders):
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    holders.append(Holder(cuda_lib, h100, 0, 2 * GiB))
    assert holders[1].free == H100_USABLE - 3 * GiB
    gpu0 = nvml(cuda_lib, h100)[0]
    assert sorted(gpu0["processes"]) == sorted([[holders[0].pid, GiB], [holders[1].pid, 2 * GiB]])
    assert gpu0["used"] == 3 * GiB


def test_a_killed_process_is_gone_at_once_and_one_that_exits_leaves_no_record(cuda_lib, h100, holders):
    killed = Holder(cuda_lib, h100, 0, GiB)
    leaving = Holder(cuda_lib, h100, 1, GiB)
    holders.extend([killed, leaving])
    killed.kill()
    gpus = nvml(cuda_lib, h100)                                # the first look after it died
    assert (gpus[0]["processes"], gpus[0]["used"]) == ([], 0)
    assert gpus[1]["processes"] == [[leaving.pid, GiB]]
    leaving.release()
    assert nvml(cuda_lib, h100)[1]["processes"] == []
    assert os.listdir(records_dir(h100)) == [str(os.geteuid())]  # the user's directory
    left = os.listdir(own_records(h100))
    assert len(left) == 1 and left[0].startswith("0.")         # only the killed one's, dead
    assert os.stat(records_dir(h100)).st_mode & 0o7777 == 0o1777
    assert os.stat(own_records(h100)).st_mode & 0o7777 == 0o755


def _flock(kind: int, start: int) -> bytes:
    return struct.pack("hhxxxxqqixxxx", kind, os.SEEK_SET, start, 1, 0)


def lock_holder(path: str, byte: int) -> int:
    """The pid the kernel reports holding a write lock on `byte` of `path` (0: none)."""
    with open(path, "rb") as f:
        got = fcntl.fcntl(f.fileno(), fcntl.F_GETLK, _flock(fcntl.F_WRLCK, byte))
    kind, _, _, _, pid = struct.unpack("hhxxxxqqixxxx", got)
    return pid if kind != fcntl.F_UNLCK else 0


def test_a_process_on_two_gpus_keeps_the_lock_naming_it_on_both_records(cuda_lib, h100, holders):
    """The lock on byte 1 is how a reader in another PID namespace learns the holder's pid."""
    holders.append(Holder(cuda_lib, h100, "0,1", GiB))
    d = own_records(h100)
    records = sorted(n for n in os.listdir(d) if not n.startswith("."))
    assert [n.split(".")[0] for n in records] == ["0", "1"]
    assert [lock_holder(os.path.join(d, n), 1) for n in records] == [holders[0].pid] * 2


def test_hostile_records_are_ignored_and_never_block(cuda_lib, h100, holders, tmp_path):
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    d = own_records(h100)
    secret = tmp_path / "secret"
    secret.write_text("mokka-process 1\npid 1\nused 999\nname x\n")
    os.symlink(secret, os.path.join(d, "0.aaaaaaaaaaaaaaaa"))           # a link: never followed
    os.mkfifo(os.path.join(d, "0.bbbbbbbbbbbbbbbb"))                      # a FIFO: never opened
    os.mkdir(os.path.join(d, "0.cccccccccccccccc"))
    with open(os.path.join(d, "0.dddddddddddddddd"), "wb") as f:         # too large to be one
        f.write(b"mokka-process 1\npid 7\nused 5\nname " + b"x" * (1 << 20) + b"\n")
    with open(os.path.join(d, "0.eeeeeeeeeeeeeeee"), "w") as f:          # well formed, but no one holds it
        f.write("mokka-process 1\npid 4242\nused 5368709120\nname stale\n")
    garbage = open(os.path.join(d, "0.ffffffffffffffff"), "w+")           # held, but not a record
    garbage.write("mokka-process 1\npid -3\nused lots\nname \x01\n")
    garbage.flush()
    fcntl.fcntl(garbage.fileno(), F_OFD_SETLK, _flock(fcntl.F_WRLCK, 0))
    try:
        seen = run_cuda(cuda_lib, h100, "meminfo", "0", timeout=60)
    finally:
        garbage.close()
    assert sorted(seen["nvml"][0]["processes"]) == sorted([[holders[0].pid, GiB], [seen["pid"], 0]])
    assert seen["free"] == H100_USABLE - GiB


def test_a_live_record_claiming_the_whole_board_fills_it_and_no_more(cuda_lib, h100, holders):
    claim = open(os.path.join(own_records(h100), "0.0123456789abcdef"), "w+")
    claim.write(f"mokka-process 1\npid {os.getpid()}\nused 85899345920\nname greedy\n")   # h100's total
    claim.flush()
    fcntl.fcntl(claim.fileno(), F_OFD_SETLK, _flock(fcntl.F_WRLCK, 0))
    try:
        gpu0 = nvml(cuda_lib, h100)[0]
        seen = run_cuda(cuda_lib, h100, "meminfo", "0")
    finally:
        claim.close()
    assert gpu0["used"] == H100_USABLE and gpu0["free"] == 0
    assert seen["free"] == 0


def test_a_live_record_claiming_more_than_the_board_fails_no_allocation(cuda_lib, h100, holders):
    """No driver grants more than the board has: such a claim is not counted."""
    claim = open(os.path.join(own_records(h100), "0.0123456789abcdef"), "w+")
    claim.write(f"mokka-process 1\npid {os.getpid()}\nused 18446744073709551615\nname greedy\n")
    claim.flush()
    fcntl.fcntl(claim.fileno(), F_OFD_SETLK, _flock(fcntl.F_WRLCK, 0))
    try:
        holders.append(Holder(cuda_lib, h100, 0, GiB))
        seen = run_cuda(cuda_lib, h100, "meminfo", "0")
    finally:
        claim.close()
    assert holders[0].free == H100_USABLE - GiB
    assert seen["free"] == H100_USABLE - GiB


def test_many_entries_are_read_within_a_bound(cuda_lib, h100):
    d = own_records(h100)
    for i in range(6000):
        open(os.path.join(d, f"0.{i:016x}"), "w").close()
    assert nvml(cuda_lib, h100)[0]["processes"] == []          # answered, none of them live
