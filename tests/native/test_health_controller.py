"""What a health controller sees on a staged h100 with MIG on: an Xid raised on a MIG
device (``mokka ctl xid``) reaches pynvml waiters on that device's handle and on its parent
naming its GPU and compute instance, as NVIDIA's device plugin tells MIG devices apart;
the recovery action ``ctl set`` gives a GPU reads back in another process and in both
nvidia-smis, and a GPU reset clears it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mokka.core import names
from tests.native import mig_nodes as mn
from tests.native.conftest import REPO, clean_env

LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
GPU0 = "GPU-01000100-0000-0000-0000-000000000000"
MIG_1G_GI9 = "MIG-6b6f175b-e0e8-5b3b-bdf7-03759db292e5"      # GPU 0's third MIG device: GI 9, CI 0
NONE = 0xFFFFFFFF                                            # nvmlEventData_t: no instance named

WAITER = """
import json, sys, pynvml as n
n.nvmlInit()
event_set = n.nvmlEventSetCreate()
gpu = n.nvmlDeviceGetHandleByIndex(0)
on = gpu if sys.argv[1] == "parent" else n.nvmlDeviceGetMigDeviceHandleByIndex(gpu, int(sys.argv[1]))
n.nvmlDeviceRegisterEvents(on, n.nvmlDeviceGetSupportedEventTypes(on) & n.nvmlEventTypeXidCriticalError, event_set)
print(json.dumps(["ready"]), flush=True)
for _ in range(int(sys.argv[2])):
    data = n.nvmlEventSetWait_v2(event_set, 30000)
    print(json.dumps([n.nvmlDeviceGetUUID(data.device), data.eventData, data.gpuInstanceId,
                      data.computeInstanceId]), flush=True)
"""

FIELDS = """
import json, sys, pynvml as n
n.nvmlInit()
out = []
for i in range(n.nvmlDeviceGetCount()):
    values = n.nvmlDeviceGetFieldValues(n.nvmlDeviceGetHandleByIndex(i), [230, 226, 227])
    out.append([v.value.uiVal for v in values])
print(json.dumps(out))
"""


@pytest.fixture
def mig_node(tmp_path) -> dict:
    return mn.board(str(tmp_path), "h100", mig="enabled", layout=LAYOUT)


def ctl(lib: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], env=clean_env(lib, env),
                          capture_output=True, text=True, timeout=60)


def python(lib: str, env: dict, code: str, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], env=clean_env(lib, env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1, **popen)


def line_of(proc: subprocess.Popen):
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    return json.loads(line)


def test_a_mig_devices_xid_names_its_instances_to_waiters_on_it_and_on_its_parent(nvml_lib, mig_node):
    on_mig = python(nvml_lib, mig_node, WAITER, "2", "3")          # GPU 0's MIG device 2: GI 9, CI 0
    on_parent = python(nvml_lib, mig_node, WAITER, "parent", "3")
    try:
        assert line_of(on_mig) == ["ready"] and line_of(on_parent) == ["ready"]
        raised = ctl(nvml_lib, mig_node, "xid", "--node-name", "kind-worker", MIG_1G_GI9, "79")
        assert raised.returncode == 0, raised.stderr
        assert json.loads(raised.stdout) == {
            "seq": 1, "gpu": 0, "uuid": GPU0, "gi": 9, "ci": 0, "code": 79,
            "kmsg": "NVRM: Xid (PCI:0000:1a:00 GPU-I:09 GPU-CI:00): 79, pid='<unknown>', name=<unknown>, "
                    "GPU has fallen off the bus. node=kind-worker"}
        for args in (("1", "79"), ("0:3", "43"), ("0", "48")):   # another GPU's; a GPU instance; the GPU
            done = ctl(nvml_lib, mig_node, "xid", *args)
            assert done.returncode == 0, done.stderr
        expected = [[GPU0, 79, 9, 0], [GPU0, 43, 3, NONE], [GPU0, 48, NONE, NONE]]
        assert [line_of(on_mig) for _ in expected] == expected
        assert [line_of(on_parent) for _ in expected] == expected
        assert on_mig.wait(30) == 0 and on_parent.wait(30) == 0
    finally:
        on_mig.kill()
        on_parent.kill()


@pytest.mark.parametrize("target, line", [
    ("0:x", "ctl: 0:x: x is not a GPU instance id; expected an integer from 0 to 14"),
    ("0:15", "ctl: 0:15: 15 is not a GPU instance id; expected an integer from 0 to 14"),
    ("0:9:8", "ctl: 0:9:8: 8 is not a compute instance id; expected an integer from 0 to 7"),
    ("0:1:2:3", "ctl: 0:1:2:3: not a GPU or MIG device; expected GPU, GPU:GI, GPU:GI:CI or a MIG "
                "device's UUID (nvidia-smi -L lists them)"),
    (":9", "ctl: :9: not a GPU or MIG device; expected GPU, GPU:GI, GPU:GI:CI or a MIG device's UUID "
           "(nvidia-smi -L lists them)"),
    ("0:5", "ctl: 0:5: GPU 0 has no MIG device there (its GPU:compute instances: 2:0, 3:0, 9:0, 10:0)"),
    ("0:9:1", "ctl: 0:9:1: GPU 0 has no MIG device there (its GPU:compute instances: 2:0, 3:0, 9:0, "
              "10:0)"),
    ("MIG-6b6f175b-0000-0000-0000-000000000000", "ctl: MIG-6b6f175b-0000-0000-0000-000000000000: no "
                                                 "such MIG device here (nvidia-smi -L lists them)"),
    ("9:1", "ctl: 9: no such GPU here (give an index from 0 to 7 or a UUID)"),
])
def test_a_malformed_or_absent_xid_target_is_one_line_and_raises_nothing(nvml_lib, mig_node, target, line):
    done = ctl(nvml_lib, mig_node, "xid", target, "79")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", line + "\n")
    events = os.path.join(os.path.dirname(mig_node[names.ENV_NVML_CONFIG]), names.XID_EVENTS_FILE)
    assert not os.path.exists(events)


def fields(lib: str, env: dict) -> list:
    proc = python(lib, env, FIELDS)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out)


def our_report_rows(lib: str, env: dict, index: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", "-q", "-i", index],
                          env=clean_env(lib, env), capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    at = rows.index("    GPU Reset Status")
    return [" ".join(row.split()) for row in rows[at:at + 4]]


def test_the_recovery_action_ctl_sets_reads_back_everywhere_until_a_reset(nvml_lib, mig_node):
    assert fields(nvml_lib, mig_node)[1] == [0, 0, 0]                      # NONE, as a healthy GPU
    for word, action, reset_required, drain_and_reset, text in (
            ("GPU_RESET", 1, 1, 0, "Reset"), ("node_reboot", 2, 0, 0, "Reboot"),
            ("DRAIN_P2P", 3, 0, 0, "Drain P2P"), ("DRAIN_AND_RESET", 4, 0, 1, "Drain and Reset")):
        done = ctl(nvml_lib, mig_node, "set", "1", f"recovery_action={word}")
        assert (done.returncode, done.stderr) == (0, ""), word
        got = fields(nvml_lib, mig_node)
        assert got[1] == [action, reset_required, drain_and_reset] and got[0] == got[2] == [0, 0, 0]
        yes = {1: "Yes", 0: "No"}
        assert our_report_rows(nvml_lib, mig_node, "1") == [
            "GPU Reset Status", f"Reset Required : {yes[reset_required]}",
            f"Drain and Reset Recommended : {yes[drain_and_reset]}", f"GPU Recovery Action : {text}"]
    reset = mn.nvidia_smi(nvml_lib, mig_node, "-r", "-i", "1")         # NVIDIA's 550 over the library
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert fields(nvml_lib, mig_node)[1] == [0, 0, 0]
    assert our_report_rows(nvml_lib, mig_node, "1")[3] == "GPU Recovery Action : None"


def test_both_nvidia_smis_query_the_reset_status_the_recovery_action_sets(nvml_lib, mig_node):
    for gpu, action in (("1", "gpu_reset"), ("2", "drain_and_reset"), ("3", "node_reboot")):
        assert ctl(nvml_lib, mig_node, "set", gpu, f"recovery_action={action}").returncode == 0
    query = ["--query-gpu=index,reset_status.reset_required,reset_status.drain_and_reset_recommended",
             "--format=csv,noheader"]
    ours = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", *query], env=clean_env(nvml_lib, mig_node),
                          capture_output=True, text=True, timeout=60)
    theirs = mn.nvidia_smi(nvml_lib, mig_node, *query)
    expected = ["0, No, No", "1, Yes, No", "2, No, Yes", "3, No, No"]
    assert ours.stdout.splitlines()[:4] == expected, ours.stderr
    assert theirs.stdout.splitlines()[:4] == expected, theirs.stderr


def test_a_recovery_action_ctl_does_not_know_is_one_line_and_sets_nothing(nvml_lib, mig_node):
    done = ctl(nvml_lib, mig_node, "set", "1", "recovery_action=reboot")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("ctl: recovery_action=reboot: expected one of none, gpu_reset, node_reboot, "
                           "drain_p2p, drain_and_reset\n")
    assert fields(nvml_lib, mig_node)[1] == [0, 0, 0]


# --- drain states --------------------------------------------------------------------

DRAIN = """
import json, sys, pynvml as n
n.nvmlInit()
pcis = [n.nvmlDeviceGetPciInfo(n.nvmlDeviceGetHandleByIndex(i)) for i in range(n.nvmlDeviceGetCount())]
if len(sys.argv) > 1:
    try:
        n.nvmlDeviceModifyDrainState(pcis[int(sys.argv[1])], int(sys.argv[2]))
        print(json.dumps("ok"))
    except n.NVMLError as exc:
        print(json.dumps(exc.value))
else:
    print(json.dumps([n.nvmlDeviceQueryDrainState(p) for p in pcis]))
"""
IN_USE = 19                                       # NVML_ERROR_IN_USE: persistence mode is on


def drain(lib: str, env: dict, *args: str):
    proc = python(lib, env, DRAIN, *args)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out)


def persistence_off(env: dict, gpu: int) -> None:
    """What ``nvidia-smi -pm 0`` leaves: the GPU's persistence mode disabled (an override)."""
    from mokka.engine import overrides
    overrides.update(os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), "overrides"), gpu,
                     {"persistence_mode": "disabled"})


@pytest.fixture
def h100(tmp_path) -> dict:
    return mn.board(str(tmp_path), "h100")


def test_a_drained_gpu_reads_drained_in_every_process_until_a_reset(nvml_lib, h100):
    assert drain(nvml_lib, h100, "1", "1") == IN_USE                    # persistence mode must be off
    persistence_off(h100, 1)
    done = mn.nvidia_smi(nvml_lib, h100, "drain", "-p", "0000:1B:00.0", "-m", "1")      # NVIDIA's 550
    assert (done.returncode, done.stdout) == (0, "Successfully set GPU 00000000:1B:00.0 drain state to: "
                                                 "draining.\n")
    assert drain(nvml_lib, h100) == [0, 1, 0, 0, 0, 0, 0, 0]
    ours = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", "drain", "-p", "0000:1B:00.0", "-q"],
                          env=clean_env(nvml_lib, h100), capture_output=True, text=True, timeout=60)
    assert (ours.returncode, ours.stdout) == (0, "The current drain state of GPU 00000000:1B:00.0 is: "
                                                 "draining.\n")
    reset = ctl(nvml_lib, h100, "reset", "1")
    assert (reset.returncode, reset.stdout) == (
        0, "GPU 1 (GPU-01000100-0000-0000-0000-000000000001): overrides dropped; drain state left\n")
    assert drain(nvml_lib, h100) == [0] * 8

    persistence_off(h100, 1)
    assert drain(nvml_lib, h100, "1", "1") == "ok"
    assert drain(nvml_lib, h100) == [0, 1, 0, 0, 0, 0, 0, 0]
    done = mn.nvidia_smi(nvml_lib, h100, "-r", "-i", "1")
    assert done.returncode == 0, done.stdout
    assert drain(nvml_lib, h100) == [0] * 8


def test_the_drain_state_is_a_line_of_the_settings_a_workload_cannot_forge(nvml_lib, h100):
    persistence_off(h100, 1)
    assert drain(nvml_lib, h100, "1", "1") == "ok"
    config = os.path.dirname(h100[names.ENV_NVML_CONFIG])
    with open(os.path.join(config, "settings.nvml")) as f:
        lines = f.read().splitlines()
    assert lines[0] == "# mokka-nvml settings 1"
    assert lines[2:] == ["gpu.1.drain 1", "gpu.1.uuid GPU-01000100-0000-0000-0000-000000000001"]
    forged = lines[:2] + ["gpu.1.drain 1", "gpu.2.drain 1"] + lines[3:]   # the digest no longer holds
    with open(os.path.join(config, "settings.nvml"), "w") as f:
        f.write("\n".join(forged) + "\n")
    assert drain(nvml_lib, h100) == [0] * 8


@pytest.mark.parametrize("args", [
    (), ("-h",), ("-x",), ("-p",), ("-q",), ("-m", "1"), ("-p", "0000:1B:00.0"),
    ("-p", "0000:1B:00.0", "-q"), ("--pciid", "0000:1b:00.0", "--query"), ("-p", "00000000:1B:00.0", "-q"),
    ("-p", "0000:1B:00.0", "-m", "x"), ("-p", "0000:1B:00.0", "-m", "2"), ("-p", "0000:1B:00.0", "-m", "1"),
    ("-p", "0000:1B:00.0", "-q", "extra"), ("-p", "0000:99:00.0", "-q"), ("-p", "0000:99:00.0", "-m", "1"),
    ("-p", "0000:1B:00.0", "-r"), ("-d",),
], ids=lambda args: " ".join(args) or "none")
def test_our_drain_subcommand_prints_what_nvidia_550_prints(nvml_lib, h100, args):
    theirs = mn.nvidia_smi(nvml_lib, h100, "drain", *args)
    ours = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", "drain", *args],
                          env=clean_env(nvml_lib, h100), capture_output=True, text=True, timeout=60)
    assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
