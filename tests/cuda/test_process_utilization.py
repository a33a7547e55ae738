"""nvmlDeviceGetProcessUtilization and nvmlDeviceGetProcessesUtilizationInfo list the GPU's
live CUDA processes, sharing the GPU's utilization of the second evenly among them (the state
knows no process's own)."""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from tests.cuda.conftest import node
from tests.cuda.test_processes import GiB, Holder, holders  # noqa: F401 (fixture)
from tests.native.conftest import run_probe

READERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native", "readers_probe.py")
#: tests/corpus/dynamic_cases.PINNED_CLOCK in µs: the sample's second.
NOW_US = 1700000000 * 1000000


@pytest.fixture
def h100(tmp_path):
    return node("h100", tmp_path, **{names.ENV_NVML_CLOCK: 1700000000})


def utilization(lib, env, gpu: int):
    """What both calls list, as the older one's samples (the newer adds JPEG and OFA: 0 here)."""
    old = run_probe(lib, env, "processes", str(gpu), probe=READERS)[0]
    new = run_probe(lib, env, "processes-info", str(gpu), probe=READERS)[0]
    if old[:1] == ["err"]:
        assert new == old
    else:
        assert new == [row + [0, 0] for row in old]
    return old


def test_a_cuda_process_has_the_gpus_utilization(cuda_lib, h100, holders):
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    # pid, timestamp, SM, memory, encoder, decoder: the h100's 17 % and 8 % at the second
    assert utilization(cuda_lib, h100, 0) == [[holders[0].pid, NOW_US, 17, 8, 0, 0]]
    assert utilization(cuda_lib, h100, 1) == ["err", 6]          # NOT_FOUND: nothing runs there


def test_two_processes_share_it(cuda_lib, h100, holders):
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    seen = utilization(cuda_lib, h100, 0)
    assert sorted(seen) == sorted([[h.pid, NOW_US, 8, 4, 0, 0] for h in holders])


def test_a_process_that_ended_is_gone(cuda_lib, h100, holders):
    holders.append(Holder(cuda_lib, h100, 0, GiB))
    holders[0].release()
    assert utilization(cuda_lib, h100, 0) == ["err", 6]
