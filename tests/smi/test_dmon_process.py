"""``nvidia-smi dmon`` and ``pmon`` (ours) over a node the real agent staged, every process
reading the pinned second: NVIDIA's 550 layout with the library's values, and 550's own
answers to a bad command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from mokka.core import names
from tests.native.staged import ctl, nvml_build, ok, staged_node  # noqa: F401  (fixtures)

CUDA_PROBE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda", "probe.py")
HEADER = "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk "
UNITS = "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz "
#: The h100's GPU 0 at the pinned second: 120 W, 34 C, HBM 32 C, SM 17 %, memory 8 %, 2619/345 MHz.
GPU0 = "    0    120     34     32     17      8      0      0      0      0   2619    345 "
PMON_HEADER = "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command "
PMON_UNITS = "# Idx           #    C/G      %      %      %      %      %      %    name "
IDLE = "    {}          -     -      -      -      -      -      -      -    -              "


@pytest.fixture(scope="module")
def node(staged_node):
    return staged_node("h100")


def lines(result) -> list[str]:
    return ok(result).split("\n")[:-1]


def test_dmon_prints_the_header_and_one_line_per_gpu(node):
    out = lines(node.run_python(["dmon", "-c", "1"]))
    assert out[:3] == [HEADER, UNITS, GPU0]
    assert [line[:5] for line in out[2:]] == [f"    {i}" for i in range(8)]


def test_dmon_s_selects_the_groups_in_its_order(node):
    out = lines(node.run_python(["dmon", "-c", "1", "-i", "0", "-s", "cm"]))
    assert out == ["# gpu   mclk   pclk     fb   bar1   ccpm ",
                   "# Idx    MHz    MHz     MB     MB     MB ",
                   "    0   2619    345      0      0      - "]


def test_long_options_take_their_value_after_an_equals_sign(node):
    out = lines(node.run_python(["dmon", "--count=1", "--id=0", "--select=c"]))
    assert out == ["# gpu   mclk   pclk ", "# Idx    MHz    MHz ", "    0   2619    345 "]


def test_dmon_two_rounds_of_one_gpu(node):
    out = lines(node.run_python(["dmon", "-i", "0", "-c", "2", "-d", "1"]))
    assert out == [HEADER, UNITS, GPU0, GPU0]


def test_dmon_follows_the_readings_ctl_sets(node):
    try:
        ok(ctl(node, "set", "1", "temperature=81", "power=300W", "utilization.gpu=55"))
        out = lines(node.run_python(["dmon", "-c", "1", "-i", "1", "-s", "pu"]))
    finally:
        ok(ctl(node, "reset"))
    assert out[2] == "    1    300     81     32     55      6      0      0      0      0 "


def test_dmon_violations_ecc_and_pcie(node):
    out = lines(node.run_python(["dmon", "-c", "1", "-i", "0", "-s", "vet"]))
    assert out == ["# gpu  pviol  tviol  sbecc  dbecc    pci  rxpci  txpci ",
                   "# Idx      %   bool   errs   errs   errs   MB/s   MB/s ",
                   "    0      0      0      0      0      0      0      0 "]


def test_dmon_date_column_and_no_header_line_into_a_file(node, tmp_path):
    log = tmp_path / "dmon.log"
    assert ok(node.run_python(["dmon", "-c", "1", "-i", "0", "-s", "p", "-o", "D", "--format", "noheader",
                               "-f", str(log)])) == ""
    units, line = log.read_text().splitlines()
    assert units == "#YYYYMMDD   Idx      W      C      C "
    assert len(line.split()[0]) == 8 and line.split()[1:] == ["0", "120", "34", "32"]


def test_dmon_csv_without_units(node):
    out = lines(node.run_python(["dmon", "-c", "1", "-i", "1", "-s", "u", "--format", "csv,nounit"]))
    assert out == ["# gpu, sm, mem, enc, dec, jpg, ofa", "1, 37, 6, 0, 0, 0, 0"]


def test_dmon_gpm_metrics_add_their_columns(node):
    out = lines(node.run_python(["dmon", "-c", "1", "-i", "0", "-s", "u", "--gpm-metrics", "2,3"]))
    assert out[:2] == ["# gpu     sm    mem    enc    dec    jpg    ofa       id=2       id=3 ",
                       "# Idx      %      %      %      %      %      %      GPM:%      GPM:% "]
    cells = out[2].split()
    assert cells[:7] == ["0", "17", "8", "0", "0", "0", "0"]
    # SM activity is the second's 17 %, SM occupancy half of it (8.5, printed as 8)
    assert cells[7:] == ["17", "8"]


def test_pmon_shows_dashes_on_idle_gpus(node):
    out = lines(node.run_python(["pmon", "-c", "1"]))
    assert out == [PMON_HEADER, PMON_UNITS] + [IDLE.format(i) for i in range(8)]


def test_pmon_time_column_and_memory_only(node):
    out = lines(node.run_python(["pmon", "-c", "1", "-i", "2", "-s", "m", "-o", "T"]))
    assert out[:2] == ["#Time        gpu         pid   type     fb   ccpm    command ",
                       "#HH:MM:SS    Idx           #    C/G     MB     MB    name "]
    assert out[2][9:] == "      2          -     -      -      -    -              "


def test_pmon_shows_a_cuda_process_with_its_pid_and_command(node):
    env = node.env(**{names.ENV_LD_LIBRARY_PATH: node.overlay.lib})
    proc = subprocess.Popen([sys.executable, CUDA_PROBE, "hold", "0", str(1 << 30)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        pid = json.loads(line)["pid"]
        out = lines(node.run_python(["pmon", "-c", "1", "-i", "0", "-s", "um"]))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert out[0] == "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa     fb   ccpm    command "
    cells = out[2].split()
    # The only process has the GPU's 17 % and 8 %, and the 1024 MiB it holds.
    assert cells[:11] == ["0", str(pid), "C", "17", "8", "-", "-", "-", "-", "1024", "0"]
    assert cells[11] == os.path.basename(sys.executable)[:15]


@pytest.mark.parametrize("args", [
    ["dmon", "-x"], ["dmon", "-c"], ["dmon", "-c", "0"], ["dmon", "-c", "abc"], ["dmon", "-d", "0"],
    ["dmon", "-d", "601"], ["dmon", "foo"], ["dmon", "-h"], ["pmon", "-d", "11"], ["pmon", "-c", "0"],
    ["pmon", "-x"], ["pmon", "--help"]])
def test_bad_options_and_help_read_as_nvidias_550(node, args):
    theirs, ours = node.run(args), node.run_python(args)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)


def test_a_bad_option_names_itself_before_the_usage(node):
    out = node.run_python(["dmon", "-c", "abc"])
    assert out.returncode == 0
    assert out.stdout.startswith("Invalid value for number of samples to be displayed\n\n    Usage: nvidia-smi dmon")


def test_an_unknown_gpu_is_not_found(node):
    out = node.run_python(["dmon", "-i", "9", "-c", "1"])
    assert (out.returncode, out.stdout) == (6, "No devices were found\n")
