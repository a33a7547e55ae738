"""``mokka ctl`` on a staged node: what it writes is read by the Python nvidia-smi,
NVIDIA's nvidia-smi over the mock library, pynvml and GPUtil; concurrent writers
never lose or corrupt a change; indices are the caller's own."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.native.staged import nvml_build, staged_node  # noqa: F401 (fixtures)


@pytest.fixture
def node(staged_node):
    node = staged_node("h100")
    yield node
    ctl(node, "reset")


def ctl(node, *args, **env):
    return subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], capture_output=True, text=True,
                          env=node.env(MOCK_NVML_CONFIG=node.config, **env), timeout=60)


def overrides_dir(node) -> str:
    return os.path.join(node.overlay.driver_config, "overrides")


def overrides(node, gpu: int) -> tuple[dict, list[str]]:
    """GPU ``gpu``'s document (physical index) and its companion, which must match it."""
    path = os.path.join(overrides_dir(node), f"gpu{gpu}.yaml")
    with open(path, "rb") as f:
        data = f.read()
    with open(path[:-5] + ".nvml") as f:
        companion = f.read().splitlines()
    assert companion[1] == "digest sha256:" + hashlib.sha256(data).hexdigest()
    return yaml.safe_load(data), companion


def documents(node) -> list:
    return sorted(os.listdir(overrides_dir(node))) if os.path.isdir(overrides_dir(node)) else []


def test_set_is_read_by_every_consumer(node):
    done = ctl(node, "set", "1", "temperature=81", "power=300W", "utilization.gpu=55")
    assert (done.returncode, done.stderr) == (0, "")
    query = ["--query-gpu=index,temperature.gpu,power.draw,utilization.gpu", "--format=csv,noheader"]
    for run in (node.run, node.run_python):
        rows = run(query).stdout.splitlines()
        assert rows[0] == "0, 34, 120.00 W, 17 %"            # utilization moves: the pinned second's
        assert rows[1] == "1, 81, 300.00 W, 55 %"
    code = ("import pynvml as n, GPUtil, json; n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(1); "
            "print(json.dumps([n.nvmlDeviceGetTemperature(h, 0), n.nvmlDeviceGetPowerUsage(h), "
            "n.nvmlDeviceGetUtilizationRates(h).gpu, GPUtil.getGPUs()[1].temperature, GPUtil.getGPUs()[1].load]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=node.env(LD_LIBRARY_PATH=node.overlay.lib,    # GPUtil runs nvidia-smi
                                       PATH=node.overlay.bin + os.pathsep + os.environ["PATH"]), timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [81, 300000, 55, 81.0, 0.55]


def test_bad_value_is_one_line_and_writes_nothing(node):
    done = ctl(node, "set", "0", "temperature=hot")
    assert done.returncode == 1
    assert done.stderr == ("ctl: temperature=hot: expected an integer from 0 to 92 (optionally with 'C'); "
                           "92 C is this GPU's shutdown temperature\n")
    assert documents(node) == []


def test_twenty_concurrent_writers_lose_nothing(node):
    keys = ["temperature", "utilization.gpu", "clocks.sm"]
    procs = [subprocess.Popen([sys.executable, "-m", "mokka", "ctl", "set", str(i % 8), f"{keys[i // 8]}={40 + i}"],
                              env=node.env(MOCK_NVML_CONFIG=node.config), stderr=subprocess.PIPE, text=True)
             for i in range(20)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 20
    paths = {"temperature": ("thermal", "temperature_gpu_c"), "utilization.gpu": ("utilization", "gpu"),
             "clocks.sm": ("clocks", "sm_current")}
    for i in range(20):
        block, leaf = paths[keys[i // 8]]
        assert overrides(node, i % 8)[0][block][leaf] == 40 + i


def test_indices_are_the_callers_own_and_reset_clears_one_gpu(node):
    # A container that sees physical GPUs 2 and 5 calls the second one "1".
    assert ctl(node, "set", "1", "temperature=90", MOCK_NVML_VISIBLE_DEVICES="2,5").returncode == 0
    assert ctl(node, "set", "GPU-01000100-0000-0000-0000-000000000003", "temperature=70").returncode == 0
    assert documents(node) == ["gpu3.nvml", "gpu3.yaml", "gpu5.nvml", "gpu5.yaml"]
    assert overrides(node, 5)[0] == {"thermal": {"temperature_gpu_c": 90}}
    assert overrides(node, 3)[0] == {"thermal": {"temperature_gpu_c": 70}}
    done = node.run_python(["-r", "-i", "3"])
    assert done.returncode == 0, done.stderr
    assert documents(node) == ["gpu5.nvml", "gpu5.yaml"]
    assert overrides(node, 5)[1][3:] == ["thermal.temperature_gpu_c 90"]
    temps = node.run(["--query-gpu=temperature.gpu", "--format=csv,noheader"]).stdout.split()
    assert temps == ["34", "34", "34", "34", "34", "90", "34", "34"]
    assert ctl(node, "reset").returncode == 0
    assert documents(node) == []
