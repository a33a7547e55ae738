"""``mokka ctl set GPU lost=true``: the mock NVML answers GPU_IS_LOST for that GPU
(its handle too, as NVML does for a GPU that fell off the bus) and the Python
nvidia-smi prints what NVIDIA's does; ``lost=false`` brings it back, no restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mokka.core import names
from tests.corpus import engine_cases as corpus
from tests.native.conftest import clean_env

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU_IS_LOST = 15

# Reads every GPU until GPU 1 answers sys.argv[1] (the library re-reads overrides
# within a second, as a running pynvml client would see it), or 10 s have passed.
CLIENT = """
import json, sys, time, pynvml as n
n.nvmlInit()
held = n.nvmlDeviceGetHandleByIndex(1)      # taken before: its queries fail too
input()
deadline = time.monotonic() + 10
while True:
    out = {}
    for i in range(n.nvmlDeviceGetCount()):
        try:
            n.nvmlDeviceGetTemperature(n.nvmlDeviceGetHandleByIndex(i), 0)
            out[i] = 0
        except n.NVMLError as exc:
            out[i] = exc.value
    if out[1] == int(sys.argv[1]) or time.monotonic() > deadline:
        break
    time.sleep(0.05)
try:
    n.nvmlDeviceGetUUID(held)
    out["held"] = 0
except n.NVMLError as exc:
    out["held"] = exc.value
print(json.dumps(out), flush=True)
"""


def mokka(*args: str, env: dict) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "MOCK_"))}
    full.update(env, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "mokka", *args], env=full,
                          capture_output=True, text=True, timeout=60)


def client(nvml_lib: str, env: dict, want: int, before=None) -> dict:
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, str(want)], env=clean_env(nvml_lib, env),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    if before is not None:
        before()
    out, err = proc.communicate("\n", timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out)


def test_a_lost_gpu_fails_every_query_and_nvidia_smi_says_so(nvml_lib, tmp_path):
    env = corpus.stage(corpus.Case("lost", "h100", ()), str(tmp_path))
    assert client(nvml_lib, env, 0)["1"] == 0

    lose = lambda: mokka("ctl", "set", "1", "lost=true", env=env)
    got = client(nvml_lib, env, GPU_IS_LOST, before=lambda: assert_ok(lose()))
    assert (got["0"], got["1"], got["2"], got["held"]) == (0, GPU_IS_LOST, 0, GPU_IS_LOST)

    smi = mokka("nvidia-smi", env=env)
    assert smi.returncode == GPU_IS_LOST
    assert smi.stdout == ("Unable to determine the device handle for GPU1: "
                          "GPU is lost.  Reboot the system to recover this GPU\n\n\n")
    assert mokka("nvidia-smi", "-i", "0", "--query-gpu=index", "--format=csv", env=env).returncode == 0

    assert_ok(mokka("ctl", "set", "1", "lost=false", env=env))
    assert client(nvml_lib, env, 0)["1"] == 0
    assert mokka("nvidia-smi", env=env).returncode == 0


def test_lost_takes_true_or_false_only(tmp_path):
    env = corpus.stage(corpus.Case("lost-bad", "h100", ()), str(tmp_path))
    done = mokka("ctl", "set", "1", "lost=maybe", env=env)
    assert (done.returncode, done.stderr) == (1, "ctl: lost=maybe: expected one of true, false\n")


def assert_ok(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.stderr

