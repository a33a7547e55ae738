"""NVML's setters over the mock library: a change made in one process is what every
other process reads (the node's settings.nvml, written by the library alone), held to
the board's bounds, refused to a caller that is not root, and undone by a GPU reset,
which makes a pending ECC mode current. An h100 board: power limits 200-700 W (700
default), persistence on, compute mode Default, ECC on, application clocks 2619/1980
MHz by default (its one memory clock), its graphics clock 345 MHz idle, supported graphics
clocks up to 1980, drawing 120 W, idle (clock event reason 0x1), no ECC errors counted;
application clocks restricted to root, as the driver starts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from mokka.core import names

from tests.native import mig_nodes as mn
from tests.native.conftest import HERE, clean_env

PROBE = os.path.join(HERE, "probe_settings.py")
SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, NO_PERMISSION, VERSION_MISMATCH = 0, 2, 3, 4, 25
BOOT = {"power_limit": 700000, "enforced_limit": 700000, "persistence": 1, "compute_mode": 0, "accounting": 0,
        "app_graphics": 1980, "app_memory": 2619, "graphics": 345, "sm": 345, "ecc": [1, 1],
        "memory": 2619, "draw": 120000, "reasons": 0x1, "app_clocks_restricted": 1, "ecc_counts": [0, 0, 0, 0]}


def probe(lib, env, *args):
    done = subprocess.run([sys.executable, PROBE, *args], env=clean_env(lib, env), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    import json
    return json.loads(done.stdout)


def settable(lib, env, gpu, call, *args, nobody=False):
    return probe(lib, env, *(["--as-nobody"] if nobody else []), "set", str(gpu), call, *map(str, args))


def read(lib, env, gpu=0):
    return probe(lib, env, "read", str(gpu))


@pytest.fixture
def node(nvml_lib, tmp_path):
    return mn.board(str(tmp_path), "h100")


def test_a_power_limit_set_in_one_process_is_read_in_another(nvml_lib, node):
    assert read(nvml_lib, node) == BOOT
    assert settable(nvml_lib, node, 0, "SetPowerManagementLimit", 300000) == SUCCESS
    assert read(nvml_lib, node) == {**BOOT, "power_limit": 300000, "enforced_limit": 300000}
    assert read(nvml_lib, node, 1) == BOOT                               # GPU 1 keeps its own
    assert settable(nvml_lib, node, 1, "SetPowerManagementLimit_v2", 0, 250000) == SUCCESS
    assert read(nvml_lib, node, 1)["power_limit"] == 250000
    with open(os.path.join(os.path.dirname(mn.state_file(node)), "settings.nvml"), "rb") as f:
        assert f.readline() == b"# mokka-nvml settings 1\n"


def test_a_power_limit_outside_the_boards_limits_is_an_invalid_argument(nvml_lib, node):
    for mw in (199999, 700001, 0):
        assert settable(nvml_lib, node, 0, "SetPowerManagementLimit", mw) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetPowerManagementLimit_v2", 1, 300000) == NOT_SUPPORTED   # the module's
    assert settable(nvml_lib, node, 0, "SetPowerManagementLimit_v2", 0, 300000, 12 | 1 << 24) == VERSION_MISMATCH
    assert settable(nvml_lib, node, 0, "SetPowerManagementLimit", 200000) == SUCCESS
    assert settable(nvml_lib, node, 0, "SetPowerManagementLimit", 700001) == INVALID_ARGUMENT
    assert read(nvml_lib, node)["power_limit"] == 200000


def test_persistence_compute_and_accounting_mode_follow_and_refuse_what_is_no_mode(nvml_lib, node):
    assert settable(nvml_lib, node, 0, "SetPersistenceMode", 0) == SUCCESS
    assert settable(nvml_lib, node, 0, "SetComputeMode", 3) == SUCCESS
    assert settable(nvml_lib, node, 0, "SetAccountingMode", 1) == SUCCESS
    assert settable(nvml_lib, node, 0, "SetPersistenceMode", 2) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetComputeMode", 4) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetAccountingMode", 2) == INVALID_ARGUMENT
    assert read(nvml_lib, node) == {**BOOT, "persistence": 0, "compute_mode": 3, "accounting": 1}
    assert settable(nvml_lib, node, 0, "SetComputeMode", 2) == SUCCESS
    assert read(nvml_lib, node)["compute_mode"] == 2


def test_application_clocks_are_among_the_supported_ones(nvml_lib, node):
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 2619, 1410) == SUCCESS
    assert read(nvml_lib, node) == {**BOOT, "app_graphics": 1410}
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 2619, 1411) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 1593, 1410) == INVALID_ARGUMENT
    assert read(nvml_lib, node)["app_graphics"] == 1410
    assert settable(nvml_lib, node, 0, "ResetApplicationsClocks") == SUCCESS
    assert read(nvml_lib, node) == BOOT


def test_locked_clocks_hold_the_moving_clocks_within_them(nvml_lib, node):
    assert settable(nvml_lib, node, 0, "SetGpuLockedClocks", 1000, 1500) == SUCCESS
    assert read(nvml_lib, node) == {**BOOT, "graphics": 1000, "sm": 1000}         # 345 idle: held at the floor
    assert settable(nvml_lib, node, 0, "SetGpuLockedClocks", 210, 300) == INVALID_ARGUMENT   # below the board's
    assert settable(nvml_lib, node, 0, "SetGpuLockedClocks", 1500, 1000) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetGpuLockedClocks", 1000, 2500) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetGpuLockedClocks", 0xFFFFFF01, 1500) == INVALID_ARGUMENT  # mixed
    assert settable(nvml_lib, node, 0, "SetGpuLockedClocks", 0xFFFFFF01, 0xFFFFFF01) == SUCCESS     # TDP
    assert read(nvml_lib, node)["graphics"] == 1980
    assert settable(nvml_lib, node, 0, "ResetGpuLockedClocks") == SUCCESS
    assert read(nvml_lib, node) == BOOT


def test_memory_clocks_lock_to_the_boards_memory_clocks(nvml_lib, node):
    assert settable(nvml_lib, node, 0, "SetMemoryLockedClocks", 1000, 2000) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetMemoryLockedClocks", 2619, 2620) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetMemoryLockedClocks", 0, 0) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetMemoryLockedClocks", 2619, 2619) == SUCCESS
    assert read(nvml_lib, node) == BOOT
    assert settable(nvml_lib, node, 0, "ResetMemoryLockedClocks") == SUCCESS
    assert settable(nvml_lib, node, 0, "SetMemoryLockedClocks", 2619, 2619, nobody=True) == NO_PERMISSION


def test_a_power_limit_under_the_draw_holds_the_draw_and_is_a_sw_power_cap(nvml_lib, node):
    done = subprocess.run([sys.executable, "-m", "mokka", "ctl", "set", "0", "power=450W"],
                          env=clean_env(nvml_lib, node), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert read(nvml_lib, node)["draw"] == 450000
    assert settable(nvml_lib, node, 0, "SetPowerManagementLimit", 300000) == SUCCESS
    assert read(nvml_lib, node) == {**BOOT, "power_limit": 300000, "enforced_limit": 300000, "draw": 300000,
                                    "reasons": 0x1 | 0x4}                   # idle, SW power cap
    assert settable(nvml_lib, node, 0, "SetPowerManagementLimit", 500000) == SUCCESS
    assert read(nvml_lib, node) == {**BOOT, "power_limit": 500000, "enforced_limit": 500000, "draw": 450000}


def test_a_reset_clears_the_settings_and_makes_the_pending_ecc_mode_current(nvml_lib, node):
    for call, *args in (("SetEccMode", 0), ("SetPowerManagementLimit", 300000), ("SetComputeMode", 3),
                        ("SetPersistenceMode", 0), ("SetGpuLockedClocks", 1000, 1500), ("SetAccountingMode", 1)):
        assert settable(nvml_lib, node, 0, call, *args) == SUCCESS
        assert settable(nvml_lib, node, 1, call, *args) == SUCCESS
    assert settable(nvml_lib, node, 0, "SetEccMode", 3) == INVALID_ARGUMENT
    changed = {**BOOT, "ecc": [1, 0], "power_limit": 300000, "enforced_limit": 300000, "compute_mode": 3,
               "persistence": 0, "graphics": 1000, "sm": 1000, "accounting": 1}
    assert read(nvml_lib, node) == changed
    done = mn.nvidia_smi(nvml_lib, node, "-r", "-i", "0")                # NVIDIA's nvidia-smi 550
    assert done.returncode == 0, done.stdout
    off = [["err", NOT_SUPPORTED]] * 4                                   # no ECC, no counts
    assert read(nvml_lib, node) == {**BOOT, "ecc": [0, 0], "ecc_counts": off}
    assert read(nvml_lib, node, 1) == changed                            # GPU 1 was not reset


def test_a_caller_that_is_not_root_gets_no_permission_and_changes_nothing(nvml_lib, node):
    for call, *args in (("SetPowerManagementLimit", 300000), ("SetPersistenceMode", 0), ("SetComputeMode", 3),
                        ("SetAccountingMode", 1), ("SetApplicationsClocks", 2619, 1410), ("ResetApplicationsClocks",),
                        ("SetGpuLockedClocks", 1000, 1500), ("ResetGpuLockedClocks",), ("SetEccMode", 0)):
        assert settable(nvml_lib, node, 0, call, *args, nobody=True) == NO_PERMISSION, call
    assert read(nvml_lib, node) == BOOT
    assert not os.path.exists(os.path.join(os.path.dirname(mn.state_file(node)), "settings.nvml"))


def test_a_mig_device_is_no_setters_target(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100", mig="enabled", layout=["1g.10gb"])
    state = mn.probe(nvml_lib, env, "state")
    assert state["gpus"][0]["devices"], state
    code = subprocess.run([sys.executable, "-c", """
import pynvml as n
n.nvmlInit()
mig = n.nvmlDeviceGetMigDeviceHandleByIndex(n.nvmlDeviceGetHandleByIndex(0), 0)
try:
    n.nvmlDeviceSetPowerManagementLimit(mig, 300000)
    print(0)
except n.NVMLError as e:
    print(e.value)
"""], env=clean_env(nvml_lib, env), capture_output=True, text=True, timeout=60)
    assert code.stdout == f"{NOT_SUPPORTED}\n", code.stderr


def ctl(lib, env, *args):
    done = subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], env=clean_env(lib, env),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def open_node(nvml_lib):
    """An h100 node whose settings any user may write (its config directory is), so that
    what a caller that is not root may change shows."""
    root = tempfile.mkdtemp(prefix="mokka-setters-")
    try:
        os.chmod(root, 0o755)
        env = mn.board(root, "h100")
        os.chmod(os.path.dirname(env[names.ENV_NVML_CONFIG]), 0o777)
        yield env
    finally:
        shutil.rmtree(root)


def test_application_clocks_opened_to_everyone_are_set_by_anyone_and_a_reset_restricts_them_again(nvml_lib,
                                                                                                   open_node):
    node = open_node
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 2619, 1410, nobody=True) == NO_PERMISSION
    assert settable(nvml_lib, node, 0, "SetAPIRestriction", 0, 0, nobody=True) == NO_PERMISSION
    assert settable(nvml_lib, node, 0, "SetAPIRestriction", 0, 2) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "SetAPIRestriction", 1, 0) == NOT_SUPPORTED     # auto boost: none here
    assert settable(nvml_lib, node, 0, "SetAPIRestriction", 0, 0) == SUCCESS
    assert read(nvml_lib, node) == {**BOOT, "app_clocks_restricted": 0}
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 2619, 1410, nobody=True) == SUCCESS
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 2619, 1411, nobody=True) == INVALID_ARGUMENT
    assert read(nvml_lib, node) == {**BOOT, "app_clocks_restricted": 0, "app_graphics": 1410}
    assert settable(nvml_lib, node, 0, "ResetApplicationsClocks", nobody=True) == SUCCESS
    assert settable(nvml_lib, node, 0, "SetGpuLockedClocks", 1000, 1500, nobody=True) == NO_PERMISSION
    assert read(nvml_lib, node, 1) == BOOT                               # GPU 1 keeps its own
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 2619, 1410, nobody=True) == SUCCESS
    assert mn.nvidia_smi(nvml_lib, node, "-r", "-i", "0").returncode == 0
    assert read(nvml_lib, node) == BOOT
    assert settable(nvml_lib, node, 0, "SetApplicationsClocks", 2619, 1410, nobody=True) == NO_PERMISSION


def test_cleared_ecc_counts_read_zero_in_every_reader_and_a_reset_keeps_the_aggregate_clearing(nvml_lib, node):
    ctl(nvml_lib, node, "ecc", "0", "sbe", "--count", "3")
    assert read(nvml_lib, node)["ecc_counts"] == [3, 3, 3, 3]
    assert settable(nvml_lib, node, 0, "ClearEccErrorCounts", 0, nobody=True) == NO_PERMISSION
    assert settable(nvml_lib, node, 0, "ClearEccErrorCounts", 2) == INVALID_ARGUMENT
    assert settable(nvml_lib, node, 0, "ClearEccErrorCounts", 0) == SUCCESS          # volatile
    assert read(nvml_lib, node)["ecc_counts"] == [0, 3, 0, 3]
    done = subprocess.run([sys.executable, "-m", "mokka", "ctl", "ecc", "0", "sbe", "--count", "5"],
                          env=clean_env(nvml_lib, node), capture_output=True, text=True, timeout=60)
    assert done.stdout == ("GPU 0 (GPU-01000100-0000-0000-0000-000000000000): 5 SBE in dram: volatile SBE 5; "
                           "aggregate SBE 8\n"), done.stderr
    assert read(nvml_lib, node)["ecc_counts"] == [5, 8, 5, 8]                         # and they grow from there
    assert settable(nvml_lib, node, 0, "ClearEccErrorCounts", 1) == SUCCESS          # aggregate
    assert read(nvml_lib, node) == {**BOOT, "ecc_counts": [5, 0, 5, 0]}
    overrides = os.path.join(os.path.dirname(mn.state_file(node)), names.OVERRIDES_DIR)
    assert sorted(os.listdir(overrides)) == ["gpu0.nvml", "gpu0.yaml", "lasting-gpu0.nvml", "lasting-gpu0.yaml"]
    assert mn.nvidia_smi(nvml_lib, node, "-r", "-i", "0").returncode == 0
    assert read(nvml_lib, node) == BOOT                                 # volatile counts gone, aggregate still 0
    ctl(nvml_lib, node, "ecc", "0", "sbe", "--count", "9")                # past the aggregate clearing's 8
    assert read(nvml_lib, node)["ecc_counts"] == [9, 9, 9, 9]
    smi = mn.nvidia_smi(nvml_lib, node, "-q", "-d", "ECC", "-i", "0")   # NVIDIA's 550 reads the same
    assert [line.split(":")[1].strip() for line in smi.stdout.splitlines() if "DRAM Correctable" in line] == ["9", "9"]


def test_a_thread_is_bound_to_its_gpus_cpus_and_cleared_to_all_of_them(nvml_lib, node):
    allowed = sorted(os.sched_getaffinity(0))                           # CPU 0 and more, on any runner
    done = subprocess.run([sys.executable, PROBE, "affinity"], env=clean_env(nvml_lib, node), capture_output=True,
                          text=True, timeout=60)
    import json
    # GPU 4's CPUs (56-111) are none this machine has: the thread keeps CPU 0; GPU 0's (0-55) it has.
    assert json.loads(done.stdout) == [[0], [0], [c for c in allowed if c <= 55], allowed], done.stderr
