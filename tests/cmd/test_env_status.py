"""``mokka env`` and ``mokka status`` against a node the real agent staged (a100, MIG on
with the all-balanced layout): after ``eval "$(dist/mokka env --host-root ROOT)"`` and
nothing else, gpustat, pynvml and NVIDIA's nvidia-smi 550 see the node's GPUs; status
shows the GPUs as that nvidia-smi does, mokka ctl's overrides and the daemons the agent
runs; an unstaged root is one line and exit 1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from tests.conftest import run_mokka
from tests.integration.nodes import agent_argv, mokka_env, native_node
from tests.peers import peer
from tests.waiting import wait_until

VENV_BIN = os.path.dirname(sys.executable)
#: The caller's environment ``mokka env`` runs in: its PATH is kept behind the node's.
CALLER = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
GPU0 = "GPU-12345678-1234-1234-1234-123456780000"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with native_node(tmp_path_factory, "hosttools", "a100", "--mig-layout", "all-balanced") as staged:
        yield staged[0]


@pytest.fixture(scope="module")
def env_lines(node, zipapp) -> str:
    done = subprocess.run([sys.executable, zipapp, "env", "--host-root", node], env=CALLER,
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def with_env(lines: str, *command: str) -> subprocess.CompletedProcess:
    """``command`` in bash with a clean environment plus only ``lines`` (eval'd)."""
    script = 'eval "$MOKKA_ENV_LINES"; unset MOKKA_ENV_LINES; exec "$@"'
    return subprocess.run(["/bin/bash", "-c", script, "bash", *command],
                          env={"MOKKA_ENV_LINES": lines}, capture_output=True, text=True, timeout=60)


def test_env_prints_one_export_line_per_variable(node, env_lines):
    overlay = f"{node}/var/lib/nvml-mock"
    assert env_lines.splitlines() == [
        f"export PATH='{overlay}/driver/usr/bin:/usr/bin:/bin'",
        f"export LD_LIBRARY_PATH='{overlay}/driver/usr/lib64'",
        f"export LD_PRELOAD='{overlay}/driver/usr/local/lib/libibmockumad.so.1:"
        f"{overlay}/driver/usr/local/lib/libibmockverbs.so.1:"
        f"{overlay}/driver/usr/local/lib/libibmocksys.so.1:{overlay}/driver/usr/local/lib/libmockfs.so.1'",
        f"export MOCK_NVML_CONFIG='{overlay}/driver/config/config.yaml'",
        f"export MOCK_PCI_ROOT='{overlay}'",
        f"export GFD_MACHINE_TYPE_FILE='{overlay}/driver/config/machine-type'",
        "export MOCK_IB='off'",
        f"export MOCK_NVML_DEV_ROOT='{overlay}/driver'",
    ]


def test_env_json_is_the_same_variables(node, env_lines):
    done = run_mokka("env", "--host-root", node, "--json", env=CALLER)
    assert done.returncode == 0, done.stderr
    shown = dict(re.fullmatch(r"export (\w+)='(.*)'", line).groups() for line in env_lines.splitlines())
    assert json.loads(done.stdout) == shown


def test_env_sets_the_node_over_an_earlier_eval_and_keeps_the_callers_search_lists(node):
    done = run_mokka("env", "--host-root", node, "--json",
                     env={"PATH": "/opt/x/bin", "LD_LIBRARY_PATH": "/opt/x/lib",
                          "MOCK_NVML_CONFIG": "/elsewhere/config.yaml"})
    got = json.loads(done.stdout)
    assert got["MOCK_NVML_CONFIG"] == f"{node}/var/lib/nvml-mock/driver/config/config.yaml"
    assert got["PATH"] == f"{node}/var/lib/nvml-mock/driver/usr/bin:/opt/x/bin"
    assert got["LD_LIBRARY_PATH"] == f"{node}/var/lib/nvml-mock/driver/usr/lib64:/opt/x/lib"


def test_env_values_come_back_unchanged_through_a_shell():
    from mokka.node.env import shell_lines
    tricky = "it's $HOME `x` \"q\" \\ \n end"
    done = subprocess.run(["/bin/bash", "-c", 'eval "$1"; printf %s "$X"', "bash", shell_lines({"X": tricky})],
                          capture_output=True, text=True, env={})
    assert done.stdout == tricky


@pytest.mark.parametrize("command", ["env", "status"])
def test_an_unstaged_root_is_one_line_and_exit_1(tmp_path, command):
    done = run_mokka(command, "--host-root", str(tmp_path))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (f"{command}: no node staged under {tmp_path} ({tmp_path}/var/lib/nvml-mock/"
                           f"driver/config/config.yaml is missing); stage one first: "
                           f"mokka node-agent --once --host-root {tmp_path}\n")


def test_gpustat_sees_the_node(env_lines):
    done = with_env(env_lines, os.path.join(VENV_BIN, "gpustat"), "--no-color", "--no-header")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split("|")[0].strip() for line in lines] == [f"[{i}] NVIDIA A100-SXM4-40GB" for i in range(8)]


def test_pynvml_sees_the_node(env_lines):
    probe = ("import pynvml as n; n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(0); "
             "print(n.nvmlDeviceGetCount(), n.nvmlDeviceGetName(h), n.nvmlDeviceGetUUID(h), "
             "n.nvmlDeviceGetMigMode(h)[0])")
    done = with_env(env_lines, sys.executable, "-c", probe)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"8 NVIDIA A100-SXM4-40GB {GPU0} 1\n"


def test_nvidias_nvidia_smi_sees_the_node(env_lines):
    done = with_env(env_lines, peer("NVIDIA_SMI"), "-L")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"GPU 0: NVIDIA A100-SXM4-40GB (UUID: {GPU0})"
    assert lines[1] == "  MIG 3g.20gb     Device  0: (UUID: MIG-ff2ab128-1b33-5ec3-a9b7-808eb374c5c6)"
    assert sum(line.startswith("GPU ") for line in lines) == 8


def uuids_of_nvidia_smi_l(text: str) -> list[str]:
    return re.findall(r"\(UUID: ((?:GPU|MIG)-[0-9a-f-]+)\)", text)


def test_status_json_uuids_are_nvidia_smis(node, env_lines):
    smi = with_env(env_lines, peer("NVIDIA_SMI"), "-L")
    done = run_mokka("status", "--host-root", node, "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    ours = []
    for gpu in got["gpus"]:
        ours.append(gpu["uuid"])
        ours += [mig["uuid"] for mig in gpu["mig"]["devices"]]
    assert len(ours) == 8 * 5
    assert ours == uuids_of_nvidia_smi_l(smi.stdout)
    assert got["profile"] == {"name": "a100", "source": "a100", "builtin": True}
    assert got["gpu_count"] == 8
    assert got["gpus"][0]["mig"]["current"] == "enabled"
    assert got["gpus"][0]["mig"]["devices"][0] == {
        "index": 0, "name": "NVIDIA A100-SXM4-40GB MIG 3g.20gb",
        "uuid": "MIG-ff2ab128-1b33-5ec3-a9b7-808eb374c5c6", "gpu_instance": 2, "compute_instance": 0}
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", got["staged"]["digest"])


def test_status_text_of_a_node_staged_once(node):
    done = run_mokka("status", "--host-root", node)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [f"host root:     {node}", f"overlay:       {node}/var/lib/nvml-mock",
                         "profile:       a100 (built-in)"]
    assert lines[4:11] == [
        "node-agent:    not running",
        "fabricmanager: not running (no ready marker)",
        "kernellog:     not running (runs in the node agent, which is not running)",
        "mock-ib:       not running (no socket)",
        "overrides:     all GPUs: none",
        "GPUs:          8",
        f"  GPU 0: NVIDIA A100-SXM4-40GB (UUID: {GPU0}) MIG enabled",
    ]
    assert lines[11] == ("    MIG 0: NVIDIA A100-SXM4-40GB MIG 3g.20gb (GI 2, CI 0) "
                         "(UUID: MIG-ff2ab128-1b33-5ec3-a9b7-808eb374c5c6)")


def test_status_shows_what_ctl_set_through_the_env_lines(node, env_lines):
    done = with_env(env_lines, "nvml-mock-ctl", "set", "3", "temperature=85")
    assert done.returncode == 0, done.stderr
    try:
        text = run_mokka("status", "--host-root", node).stdout
        doc = json.loads(run_mokka("status", "--host-root", node, "--json").stdout)
    finally:
        assert with_env(env_lines, "nvml-mock-ctl", "reset").returncode == 0
    assert "    overrides: thermal.temperature_gpu_c=85" in text.splitlines()
    assert [g["overrides"] for g in doc["gpus"]] == [{}] * 3 + [{"thermal": {"temperature_gpu_c": 85}}] + [{}] * 4
    assert "overrides" not in run_mokka("status", "--host-root", node).stdout.split("GPUs:")[1]


def test_status_sees_the_agents_daemons_while_it_serves(tmp_path):
    root = str(tmp_path)
    agent = subprocess.Popen(agent_argv(root, "t4", "--container-runtime", "none"), env=mokka_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def serving():
            done = run_mokka("status", "--host-root", root, "--json")
            doc = json.loads(done.stdout) if done.returncode == 0 else {}
            return doc if doc and all(d["running"] for d in doc["daemons"].values()) else None
        doc = wait_until(serving, "the agent's daemons in mokka status", timeout=60, interval=0.2)
        assert doc["node_agent"] == {"running": True, "pid": agent.pid}
        assert doc["daemons"]["kernellog"] == {"running": True, "detail": f"in node-agent pid {agent.pid}"}
        assert doc["daemons"]["mock-ib"] == {"running": True,
                                             "detail": f"{root}/var/lib/nvml-mock/run/mock-ib.sock"}
        assert re.fullmatch(r"pid \d+", doc["daemons"]["fabricmanager"]["detail"])
    finally:
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert run_mokka("status", "--host-root", root).returncode == 1       # torn down: not staged


@pytest.mark.parametrize("command, example", [
    ("env", 'Example: eval "$(mokka env --host-root /tmp/node)"; nvidia-smi -L'),
    ("status", "Example: mokka status --host-root /tmp/node --json")])
def test_help_carries_an_example(command, example):
    done = run_mokka(command, "--help")
    assert done.returncode == 0
    assert example in done.stdout
