"""nvidia-smi's Processes box and --query-compute-apps, NVIDIA's 550 and ours, over a
node the real agent staged: a process holding 1 GiB on GPU 0 through the mock CUDA
driver is listed; SIGKILLed, it is gone at the first look after its death."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from mokka.core import names
from tests.native.staged import nvml_build, ok, staged_node  # noqa: F401  (fixtures)

HERE = os.path.dirname(os.path.abspath(__file__))
GiB = 1 << 30


@pytest.fixture
def node(staged_node):
    return staged_node("h100")


def holder(node):
    env = node.env(**{names.ENV_LD_LIBRARY_PATH: node.overlay.lib})
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "probe.py"), "hold", "0", str(GiB)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    return proc, json.loads(line)["pid"]


def process_rows(table: str) -> list[list[str]]:
    """The rows of the Processes box: [gpu, gi, ci, pid, type, name..., memory]."""
    box = table.split("Processes:", 1)[1]
    return [line.strip("| ").split() for line in box.splitlines()
            if re.match(r"\|\s+\d+\s", line)]


def both(node, args):
    return ok(node.run(args)), ok(node.run_python(args))


def test_both_nvidia_smis_list_the_holder_and_forget_it_when_killed(node):
    proc, pid = holder(node)
    try:
        for table in both(node, []):
            rows = process_rows(table)
            assert [(r[0], r[3], r[4], r[-1]) for r in rows] == [("0", str(pid), "C", "1024MiB")], table
        for csv in both(node, ["--query-compute-apps=pid,used_memory", "--format=csv,noheader"]):
            assert csv.splitlines() == [f"{pid}, 1024 MiB"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    for table in both(node, []):
        assert "No running processes found" in table and process_rows(table) == []
    for csv in both(node, ["--query-compute-apps=pid,used_memory", "--format=csv,noheader"]):
        assert csv.strip() == ""
