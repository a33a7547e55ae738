"""Board readings DCGM asks for that no moving reading drives: the GPU's interrupt (one
profile value behind sysfs ``irq``, the driver's /proc ``information`` and
nvmlDeviceGetIrqNum), its power source, its customer boost clock, adaptive clocking,
excluded GPUs (none), and the clocks' VF offsets, which a root caller sets node-wide
within the board's range and a GPU reset drops. Staged h100 and t4 boards.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from mokka.agent.simulators import gpudriver, pcibus
from mokka.core import compile as comp
from mokka.core import profile as prof
from tests.native import mig_nodes as mn
from tests.native.conftest import HERE, clean_env

SETTER = os.path.join(HERE, "probe_settings.py")
SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, NO_PERMISSION = 0, 2, 3, 4

READ = r"""
import ctypes, json, sys
import pynvml as n
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(int(sys.argv[1]))
def call(fn, *args):
    try:
        return fn(*args)
    except n.NVMLError as e:
        return ["err", e.value]
def span(fn):
    lo, hi = ctypes.c_int(), ctypes.c_int()
    got = call(fn, h, ctypes.byref(lo), ctypes.byref(hi))
    return got if isinstance(got, list) else [lo.value, hi.value]
def excluded():
    try:
        n.nvmlGetExcludedDeviceInfoByIndex(0)
        return "answered"
    except n.NVMLError as e:
        return ["err", e.value]
print(json.dumps({
    "irq": call(n.nvmlDeviceGetIrqNum, h),
    "power_source": call(n.nvmlDeviceGetPowerSource, h),
    "boost": call(n.nvmlDeviceGetMaxCustomerBoostClock, h, n.NVML_CLOCK_GRAPHICS),
    "boost_mem": call(n.nvmlDeviceGetMaxCustomerBoostClock, h, n.NVML_CLOCK_MEM),
    "adaptive": call(n.nvmlDeviceGetAdaptiveClockInfoStatus, h),
    "excluded_count": n.nvmlGetExcludedDeviceCount(),
    "excluded_0": excluded(),
    "gpc_offset": call(n.nvmlDeviceGetGpcClkVfOffset, h),
    "mem_offset": call(n.nvmlDeviceGetMemClkVfOffset, h),
    "gpc_range": span(n.nvmlDeviceGetGpcClkMinMaxVfOffset),
    "mem_range": span(n.nvmlDeviceGetMemClkMinMaxVfOffset),
}))
"""


def read(lib, env, gpu=0) -> dict:
    done = subprocess.run([sys.executable, "-c", READ, str(gpu)], env=clean_env(lib, env),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


def setter(lib, env, gpu, call, *args, nobody=False) -> int:
    done = subprocess.run([sys.executable, SETTER, *(["--as-nobody"] if nobody else []), "set", str(gpu), call,
                           *map(str, args)], env=clean_env(lib, env), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


H100_BOOT = {"irq": 300, "power_source": 0, "boost": 1980, "boost_mem": ["err", NOT_SUPPORTED], "adaptive": 1,
             "excluded_count": 0, "excluded_0": ["err", INVALID_ARGUMENT], "gpc_offset": 0, "mem_offset": 0,
             "gpc_range": [-1000, 1000], "mem_range": [-1000, 1000]}


@pytest.fixture
def h100(nvml_lib, tmp_path):
    return mn.board(str(tmp_path), "h100")


def test_an_h100_answers_its_board_readings(nvml_lib, h100):
    assert read(nvml_lib, h100) == H100_BOOT
    assert read(nvml_lib, h100, 7)["irq"] == 307


def test_a_t4_boosts_to_1590_and_has_no_adaptive_clocking(nvml_lib, tmp_path):
    got = read(nvml_lib, mn.board(str(tmp_path), "t4"))
    assert (got["boost"], got["adaptive"], got["power_source"]) == (1590, ["err", NOT_SUPPORTED], 0)


def test_the_profiles_interrupt_is_what_sysfs_the_driver_and_nvml_report(nvml_lib, tmp_path):
    doc = yaml.safe_load(prof.load("a100").text)
    doc["devices"][1]["pci"]["irq"] = 1043
    path = os.path.join(str(tmp_path), "a100.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    gpus = comp.compile_profile(prof.load(path))["gpus"]
    assert pcibus.attributes(gpus[1])["irq"].data == b"1043\n"
    assert "IRQ:   \t\t 1043\n" in gpudriver.information(gpus[1], "550.163.01")
    assert pcibus.attributes(gpus[0])["irq"].data == b"300\n"
    assert "IRQ:   \t\t 300\n" in gpudriver.information(gpus[0], "550.163.01")


def test_vf_offsets_set_by_root_are_read_by_every_process_until_a_reset(nvml_lib, h100):
    assert setter(nvml_lib, h100, 0, "SetGpcClkVfOffset", -150) == SUCCESS
    assert setter(nvml_lib, h100, 0, "SetMemClkVfOffset", 1000) == SUCCESS
    assert read(nvml_lib, h100) == {**H100_BOOT, "gpc_offset": -150, "mem_offset": 1000}
    assert read(nvml_lib, h100, 1) == {**H100_BOOT, "irq": 301}
    with open(os.path.join(os.path.dirname(mn.state_file(h100)), "settings.nvml"), encoding="utf-8") as f:
        assert "gpu.0.clock_vf_offsets -150 1000\n" in f.read()
    done = subprocess.run([mn.peer("NVIDIA_SMI"), "-r", "-i", "0"], env=clean_env(nvml_lib, h100),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert read(nvml_lib, h100) == H100_BOOT


def test_vf_offsets_past_the_range_or_from_a_user_are_refused(nvml_lib, h100):
    assert setter(nvml_lib, h100, 0, "SetGpcClkVfOffset", 1001) == INVALID_ARGUMENT
    assert setter(nvml_lib, h100, 0, "SetMemClkVfOffset", -1001) == INVALID_ARGUMENT
    assert setter(nvml_lib, h100, 0, "SetGpcClkVfOffset", 100, nobody=True) == NO_PERMISSION
    assert read(nvml_lib, h100) == H100_BOOT


def test_a_settings_file_with_an_offset_past_the_range_leaves_the_boards(nvml_lib, h100):
    assert setter(nvml_lib, h100, 0, "SetGpcClkVfOffset", 20) == SUCCESS
    path = os.path.join(os.path.dirname(mn.state_file(h100)), "settings.nvml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    body = text.split("\n", 2)[2].replace("clock_vf_offsets 20 0", "clock_vf_offsets 20 5000")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# mokka-nvml settings 1\ndigest sha256:{hashlib.sha256(body.encode()).hexdigest()}\n{body}")
    done = subprocess.run([sys.executable, "-c", READ, "0"], env=clean_env(nvml_lib, h100),
                          capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout)["gpc_offset"] == 0
    assert "clock VF offsets that are not two offsets in MHz within the board's range" in done.stderr
