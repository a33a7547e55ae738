"""Our nvidia-smi's device modifications (-pl, -pm, -c, -lgc/-rgc, -lmc/-rmc, -ac/-rac, -e, -p,
-acp, -caa): NVIDIA's 550 texts and exit statuses (tests/native/test_setters_550.py runs
NVIDIA's binary over the same library for them), and the change read back by the next run.
An h100 overlay: power limits 200-700 W, persistence on, compute mode Default, ECC on,
application clocks 2619/1980 MHz, its graphics clock 345 MHz idle."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BUS0 = "00000000:1A:00.0"
EARLY = "Terminating early due to previous errors.\n"
QUERY = ["--query-gpu=power.limit,persistence_mode,compute_mode,clocks.sm,clocks.applications.graphics,"
         "ecc.mode.current,ecc.mode.pending", "--format=csv,noheader", "-i", "0"]
BOOT = "700.00 W, Enabled, Default, 345 MHz, 1980 MHz, Enabled, Enabled\n"
PERSISTENCE_OFF = ("\nWarning: persistence mode is disabled on device 00000000:1A:00.0. See the Known Issues "
                   "section of the nvidia-smi(1) man page for more information. Run with [--help | -h] switch "
                   "to get more information on how to enable persistence mode.\n")


@pytest.fixture
def ov(fresh):
    return fresh("h100")


def said(ov, dev_root, *args) -> tuple:
    done = ov.run(list(args), str(dev_root))
    assert done.stderr == "", done.stderr
    return done.returncode, done.stdout


def test_power_limit_persistence_and_compute_mode_are_set_and_read_back(ov, dev_root):
    assert said(ov, dev_root, *QUERY) == (0, BOOT)
    assert said(ov, dev_root, "-pl", "300", "-i", "0") == (
        0, f"Power limit for GPU {BUS0} was set to 300.00 W from 700.00 W.\nAll done.\n")
    assert said(ov, dev_root, "-pm", "0", "-i", "0") == (0, f"Disabled persistence mode for GPU {BUS0}.\nAll done.\n")
    assert said(ov, dev_root, "-pm", "DISABLED", "-i", "0") == (
        0, f"Persistence mode is already Disabled for GPU {BUS0}.\nAll done.\n")
    assert said(ov, dev_root, "-c", "EXCLUSIVE_PROCESS", "-i", "0") == (
        0, f"Set compute mode to EXCLUSIVE_PROCESS for GPU {BUS0}.\nAll done.\n")
    assert said(ov, dev_root, "-c", "3", "-i", "0") == (
        0, f"Compute mode is already set to EXCLUSIVE_PROCESS for GPU {BUS0}.\nAll done.\n")
    assert said(ov, dev_root, *QUERY) == (0, "300.00 W, Disabled, Exclusive_Process, 345 MHz, 1980 MHz, Enabled, "
                                             "Enabled\n")
    assert said(ov, dev_root, "--query-gpu=power.limit", "--format=csv,noheader", "-i", "1") == (0, "700.00 W\n")
    assert said(ov, dev_root, "-am", "1", "-i", "0") == (0, f"Enabled Accounting Mode for GPU {BUS0}.\nAll done.\n")
    assert said(ov, dev_root, "--query-gpu=accounting.mode", "--format=csv,noheader", "-i", "0") == (0, "Enabled\n")


def test_clocks_are_locked_and_set_among_the_supported_ones(ov, dev_root):
    ov.run(["-pm", "0", "-i", "0"], str(dev_root))
    assert said(ov, dev_root, "-lgc", "1000,1500", "-i", "0") == (
        0, f'GPU clocks set to "(gpuClkMin 1000, gpuClkMax 1500)" for GPU {BUS0}\n{PERSISTENCE_OFF}All done.\n')
    assert said(ov, dev_root, "-ac", "2619,1410", "-i", "0") == (
        0, f'Applications clocks set to "(MEM 2619, SM 1410)" for GPU {BUS0}\n{PERSISTENCE_OFF}All done.\n')
    assert said(ov, dev_root, *QUERY) == (0, "700.00 W, Disabled, Default, 1000 MHz, 1410 MHz, Enabled, Enabled\n")
    assert said(ov, dev_root, "-lgc", "1500,1000", "-i", "0") == (
        0, f'Specified clock combination "(gpuClkMin 1500, gpuClkMax 1000)" is not supported for GPU {BUS0}. '
           "Run 'nvidia-smi -q -d SUPPORTED_CLOCKS' to see list of supported clock combinations\n"
           "Treating as warning and moving on.\nAll done.\n")
    assert said(ov, dev_root, "-lmc", "2619", "-i", "0") == (
        0, f'Memory clocks set to "(memClkMin 2619, memClkMax 2619)" for GPU {BUS0}\n{PERSISTENCE_OFF}All done.\n')
    assert said(ov, dev_root, "-rmc", "-i", "0") == (0, "All done.\n")
    assert said(ov, dev_root, "-rgc", "-i", "0") == (0, "All done.\n")
    assert said(ov, dev_root, "-rac", "-i", "0") == (0, "All done.\n")
    assert said(ov, dev_root, *QUERY) == (0, "700.00 W, Disabled, Default, 345 MHz, 1980 MHz, Enabled, Enabled\n")


def test_an_ecc_change_is_pending_until_the_reset_that_clears_the_rest(ov, dev_root):
    ov.run(["-pl", "250", "-i", "0"], str(dev_root))
    assert said(ov, dev_root, "-e", "0", "-i", "0") == (
        0, f"Disabled ECC support for GPU {BUS0}.\nAll done.\nReboot required.\n")
    assert said(ov, dev_root, "-e", "0", "-i", "0") == (0, f"ECC support is already Disabled for GPU {BUS0}.\n"
                                                           "All done.\n")
    assert said(ov, dev_root, *QUERY) == (0, "250.00 W, Enabled, Default, 345 MHz, 1980 MHz, Enabled, Disabled\n")
    assert said(ov, dev_root, "-r", "-i", "0")[0] == 0
    assert said(ov, dev_root, *QUERY) == (0, "700.00 W, Enabled, Default, 345 MHz, 1980 MHz, Disabled, Disabled\n")
    assert said(ov, dev_root, "-p", "0", "-i", "0") == (
        0, f"ECC features not supported for GPU {BUS0}.\nTreating as warning and moving on.\nAll done.\n")


def ctl(ov, dev_root, *args) -> None:
    env = {**ov.env(str(dev_root)), "MOCK_NVML_CONFIG": str(ov.config_dir / "config.yaml"), "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def dram_correctable(ov, dev_root) -> list:
    """-q -d ECC's "DRAM Correctable": volatile, aggregate."""
    done = ov.run(["-q", "-d", "ECC", "-i", "0"], str(dev_root))
    return [line.split(":")[1].strip() for line in done.stdout.splitlines() if "DRAM Correctable" in line]


def test_ecc_counts_reset_to_zero_volatile_then_aggregate_and_count_on_from_there(ov, dev_root):
    ctl(ov, dev_root, "ecc", "0", "sbe", "--count", "3")
    assert dram_correctable(ov, dev_root) == ["3", "3"]
    assert said(ov, dev_root, "-p", "0", "-i", "0") == (0, f"Reset volatile ECC errors to zero for GPU {BUS0}.\n"
                                                           "All done.\n")
    assert dram_correctable(ov, dev_root) == ["0", "3"]
    assert said(ov, dev_root, "-p", "AGGREGATE", "-i", "0") == (
        0, f"Reset aggregate ECC errors to zero for GPU {BUS0}.\nAll done.\n")
    assert dram_correctable(ov, dev_root) == ["0", "0"]
    ctl(ov, dev_root, "ecc", "0", "sbe")
    assert dram_correctable(ov, dev_root) == ["1", "1"]


@pytest.mark.parametrize("args, code, text", [
    (["-pl", "5"], 2, f"Provided power limit 5.00 W is not a valid power limit which should be between 200.00 W "
                      f"and 700.00 W for GPU {BUS0}\n{EARLY}"),
    (["-pl", "abc"], 2, "ERROR: Option abc is invalid for -pl. Please run 'nvidia-smi -h' for help.\n\n"),
    (["-pm", "5"], 2, f"Invalid persistence mode: 5\n{EARLY}"),
    (["-c", "9"], 2, f"Invalid compute mode: 9\n{EARLY}"),
    (["-c", "1"], 0, "Exclusive_Thread was deprecated! Use value 3:Exclusive_Process instead.\n"
                     "Treating as warning and moving on.\nAll done.\n"),
    (["-e", "foo"], 2, "ERROR: Option foo is invalid for -e. Please run 'nvidia-smi -h' for help.\n\n"),
    (["-ac", "2619"], 2, 'Specified clocks "2619" are not valid. Please format input as memClk,smClk e.g. '
                         f"--applications-clocks=2000,300\n{EARLY}"),
    (["-lgc", "300,tdp"], 2, "Specified clocks \"300\" are not valid. Please format input as 'gpuClkMin,gpuClkMax' "
                             "or 'gpuClkVal' e.g. '--lock-gpu-clocks=1500,1500', '--lock-gpu-clocks=1500', or "
                             f"'--lock-gpu-clocks=tdp,unlimited'\n{EARLY}"),
    (["-lmc", "a,b"], 2, "Specified clocks \"a,b\" are not valid. Please format input as 'memClkMin,memClkMax' or "
                         "'memClkVal' e.g. --lock-memory-clocks=5100,5100 or --lock-memory-clocks=5100\n" + EARLY),
    (["-p", "2"], 2, f"Invalid ECC type: 2\n{EARLY}"),
    (["-p", "aggregate"], 2, "ERROR: Option aggregate is invalid for -p. Please run 'nvidia-smi -h' for help.\n\n"),
    (["-acp", "0"], 0, "Warning: This option is deprecated and will be removed in future releases\n"
                       "Treating as warning and moving on.\nAll done.\n"),
    (["-acp", "restricted"], 2, "ERROR: Option restricted is invalid for -acp. Please run 'nvidia-smi -h' for "
                                "help.\n\n"),
    (["-caa"], 0, f"Cleared Accounted PIDs for GPU {BUS0}.\nAll done.\n"),
    (["-p", "0", "-acp", "0"], 2, "Invalid combination of input arguments. Only one device modification may be "
                                  "done at a time.\n\n"),
    (["-pl", "300", "-pm", "1"], 2, "Invalid combination of input arguments. Only one device modification may be "
                                    "done at a time.\n\n"),
])
def test_a_value_nvidia_smi_refuses_is_refused_with_its_words(ov, dev_root, args, code, text):
    assert said(ov, dev_root, *args, "-i", "0") == (code, text)
    assert said(ov, dev_root, *QUERY) == (0, BOOT)


@pytest.fixture
def readable(nvml_build):
    """An h100 overlay every user may read (tmp_path's parents are root's alone)."""
    from tests.smi.conftest import DevRoot, stage_overlay
    root = tempfile.mkdtemp(prefix="mokka-setters-")
    os.chmod(root, 0o755)
    try:
        yield stage_overlay(Path(root) / "overlay", "h100", nvml_build), DevRoot(Path(root) / "devroot")
    finally:
        shutil.rmtree(root)


def test_a_user_that_is_not_root_gets_nvidias_insufficient_permissions(readable):
    """The interpreter gives up root once it has imported what it runs (the library checks
    the caller when it is called, as the driver does)."""
    ov, dev_root = readable
    script = ("import os, sys\n"
              "from mokka.smi import cli, setters, devices, gpu, values\n"
              "from mokka.engine import nvml, nvml_types\n"
              "os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)\n"
              "sys.exit(cli.main(sys.argv[1:]))\n")
    env = {**ov.env(str(dev_root)), "MOCK_NVML_CONFIG": str(ov.config_dir / "config.yaml"), "PYTHONPATH": REPO}
    for args, text in ((["-pl", "300"], "Failed to set power management limit for GPU {}: Insufficient Permissions"),
                       (["-pm", "0"], "Unable to set persistence mode for GPU {}: Insufficient Permissions"),
                       (["-c", "3"], "Unable to set the compute mode for GPU {}: Insufficient Permissions"),
                       (["-e", "0"], "Unable to set ECC config for GPU {}: Insufficient Permissions"),
                       (["-p", "1"], "Unable to clear ECC errors for GPU {}: Insufficient Permissions"),
                       (["-caa"], "Unable to clear Accounted PIDs for GPU {}: Insufficient Permissions"),
                       (["-lgc", "1000,1500"], "The current user does not have permission to change clocks for "
                                               "GPU {}.")):
        done = subprocess.run([sys.executable, "-c", script, *args, "-i", "0"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert (done.returncode, done.stdout) == (4, text.format(BUS0) + "\n" + EARLY), done.stderr
    assert said(ov, dev_root, *QUERY) == (0, BOOT)
