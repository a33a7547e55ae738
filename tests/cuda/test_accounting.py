"""Accounting: while a GPU's accounting mode is on, its live CUDA processes are its accounted
ones (nvmlDeviceGetAccountingPids) with a running process's stats (GetAccountingStats: its
share of the GPU's utilization, the memory it holds, time 0, running), and NVIDIA's 550
nvidia-smi lists them; with accounting off none is; a process that ended leaves none behind.
ClearAccountingPids (root only) clears terminated processes: the live ones stay. Our
nvidia-smi prints what NVIDIA's does (-q -d ACCOUNTING, --query-accounted-apps). An h100
pinned to one second: 17 % GPU and 8 % memory utilization."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mokka.core import names
from tests.cuda.conftest import cuda_env, node
from tests.cuda.test_processes import GiB, Holder, holders  # noqa: F401 (fixture)
from tests.native import mig_nodes as mn
from tests.native.test_setters import settable

NOT_FOUND, NO_PERMISSION = 6, 4
READ = """
import json, sys
import pynvml as n
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(int(sys.argv[1]))
def call(fn, *args):
    try:
        return fn(*args)
    except n.NVMLError as e:
        return ["err", e.value]
pids = call(n.nvmlDeviceGetAccountingPids, h)
stats = {}
for pid in (pids if pids[:1] != ["err"] else []) + [int(sys.argv[2])]:
    s = call(n.nvmlDeviceGetAccountingStats, h, pid)
    stats[pid] = s if isinstance(s, list) else [s.gpuUtilization, s.memoryUtilization, s.maxMemoryUsage, s.time,
                                                 s.startTime, s.isRunning]
print(json.dumps([pids, stats]))
"""


@pytest.fixture
def h100(tmp_path):
    return node("h100", tmp_path, **{names.ENV_NVML_CLOCK: 1700000000})


def accounted(lib, env, gpu: int, pid: int) -> list:
    """[pids, {pid: stats or error}] of GPU `gpu`, with `pid`'s stats asked for too."""
    done = subprocess.run([sys.executable, "-c", READ, str(gpu), str(pid)], env=cuda_env(lib, env),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pids, stats = json.loads(done.stdout)
    return [pids, {int(k): v for k, v in stats.items()}]


def started_us(pid: int) -> int:
    """The process's start as the kernel has it, in µs since the epoch."""
    with open(f"/proc/{pid}/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as f:
        boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    return boot * 1000000 + ticks * 1000000 // os.sysconf("SC_CLK_TCK")


def test_a_live_cuda_process_is_accounted_while_accounting_is_on(cuda_lib, h100, holders):
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    pid = holders[0].pid
    assert accounted(cuda_lib, h100, 0, pid) == [[], {pid: ["err", NOT_FOUND]}]          # accounting off
    assert settable(cuda_lib, h100, 0, "SetAccountingMode", 1) == 0
    assert accounted(cuda_lib, h100, 0, pid) == [[pid], {pid: [17, 8, GiB, 0, started_us(pid), 1]}]
    assert accounted(cuda_lib, h100, 1, pid) == [[], {pid: ["err", NOT_FOUND]}]          # it runs on GPU 0


def smis(lib, env, *args) -> list:
    """What NVIDIA's 550 and ours print, the report's timestamp line left out."""
    theirs = mn.nvidia_smi(lib, env, *args)
    ours = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", *args], env=cuda_env(lib, env),
                          capture_output=True, text=True, timeout=60)
    return [(done.returncode, [line for line in done.stdout.splitlines() if not line.startswith("Timestamp")])
            for done in (theirs, ours)]


def test_both_nvidia_smis_list_the_accounted_process(cuda_lib, h100, holders):
    assert settable(cuda_lib, h100, 0, "SetAccountingMode", 1) == 0
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    pid = holders[0].pid
    theirs, ours = smis(cuda_lib, h100, "-q", "-d", "ACCOUNTING", "-i", "0")
    assert theirs == ours
    assert "\n".join(theirs[1]).split("Accounted Processes\n", 1)[1].splitlines() == [
        f"        Process ID                        : {pid}",
        "            GPU Utilization               : 17 %",
        "            Memory Utilization            : 8 %",
        "            Max memory usage              : 1024 MiB",
        "            Time                          : 0 ms",
        "            Is Running                    : 1"]
    query = "--query-accounted-apps=gpu_bus_id,pid,gpu_util,mem_util,max_memory_usage,time,vgpu_instance"
    theirs, ours = smis(cuda_lib, h100, query, "--format=csv")
    assert theirs == ours == (0, [
        "gpu_bus_id, pid, gpu_utilization [%], mem_utilization [%], max_memory_usage [MiB], time [ms], vgpu_instance",
        f"00000000:1A:00.0, {pid}, 17 %, 8 %, 1024 MiB, 0 ms, N/A"])


def test_clearing_keeps_the_live_processes_and_an_ended_one_is_gone(cuda_lib, h100, holders):
    assert settable(cuda_lib, h100, 0, "SetAccountingMode", 1) == 0
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    pid = holders[0].pid
    assert settable(cuda_lib, h100, 0, "ClearAccountingPids", nobody=True) == NO_PERMISSION
    assert settable(cuda_lib, h100, 0, "ClearAccountingPids") == 0
    assert accounted(cuda_lib, h100, 0, pid)[0] == [pid]
    holders[0].release()
    assert accounted(cuda_lib, h100, 0, pid) == [[], {pid: ["err", NOT_FOUND]}]
