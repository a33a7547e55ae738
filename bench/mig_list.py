"""NVIDIA's own ``nvidia-smi -L`` over a node of 8 GPUs with 7 MIG devices each (56), against
a fresh-venv ``python -c pass`` measured in the same run (target <= 0.5x), beside the same
node with MIG off (what the MIG devices add).

The node is staged by the real agent from the h100 profile with MIG on and a boot layout of
seven 1g instances per GPU, so every GPU's devices come from the partitions the profile
boots with (read from the compiled state, no mig.nvml).

    python3 bench/mig_list.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from common import build_native_libraries, fresh_venv_python, require_test_environment, runtime_peer, time_command  # noqa: E402

require_test_environment()

import yaml  # noqa: E402
from nvml_startup import agent  # noqa: E402

from mokka.core import names  # noqa: E402
from mokka.core import profile as prof  # noqa: E402

LAYOUT = "bench-seven-1g"
TARGET = 0.5


def mig_profile(path: str, enabled: bool, seven: bool = True) -> str:
    """The h100 profile, MIG on with seven 1g instances per GPU at boot (``seven``) or
    none, or MIG off."""
    doc = yaml.safe_load(prof.load("h100").text)
    block = doc["device_defaults"]["mig"]
    if enabled:
        block["mode_current"] = block["mode_pending"] = "enabled"
    if enabled and seven:
        one_g = min(block["gpu_instance_profiles"], key=lambda p: (p["slices"], p["memory_mib"], p["index"]))
        block["layouts"] = [*(block.get("layouts") or []), {"name": LAYOUT, "gpu_instances": [one_g["name"]] * 7}]
        block["layout"] = LAYOUT
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return path


def workload_env(tmp: str) -> dict:
    """A process on the staged node as a workload starts it: no MOCK_ or LD_ variable of
    ours, and a dev root of its own with no capability node (it sees every MIG device)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "LD_"))}
    env[names.ENV_DEV_ROOT] = os.path.join(tmp, "devroot")
    os.makedirs(env[names.ENV_DEV_ROOT])
    return env


def stage(tmp: str, name: str, enabled: bool, nvidia_smi: str) -> str:
    root = os.path.join(tmp, name)
    agent(root, "--once", "--profile", mig_profile(os.path.join(tmp, f"{name}.yaml"), enabled),
          "--nvidia-smi", nvidia_smi)
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=30)
    opts = ap.parse_args()
    nvidia_smi = runtime_peer("NVIDIA_SMI")
    build_native_libraries()
    with tempfile.TemporaryDirectory(prefix="mokka-bench-mig-") as tmp:
        roots = {}
        try:
            roots = {"mig": stage(tmp, "mig", True, nvidia_smi), "off": stage(tmp, "off", False, nvidia_smi)}
            env = workload_env(tmp)
            smi = {k: os.path.join(r, names.OVERLAY_HOST_PATH.lstrip("/"), names.DRIVER_BIN_DIR, "nvidia-smi")
                   for k, r in roots.items()}
            listed = subprocess.run([smi["mig"], "-L"], capture_output=True, text=True, env=env, check=True).stdout
            devices = sum(line.startswith("  MIG ") for line in listed.splitlines())
            base = statistics.median(time_command([fresh_venv_python(), "-c", "pass"], opts.runs, env=env))
            mig = statistics.median(time_command([smi["mig"], "-L"], opts.runs, env=env))
            off = statistics.median(time_command([smi["off"], "-L"], opts.runs, env=env))
        finally:                      # the agent bind-mounts /run/nvidia/driver: undo it
            for root in roots.values():
                agent(root, "--teardown")
    ratio = mig / base
    print(f"{opts.runs} warm runs each, medians")
    print(f"  fresh venv python -c pass                    {base:7.2f} ms")
    print(f"  NVIDIA nvidia-smi -L, 8 GPUs, {devices} MIG devices  {mig:7.2f} ms  {ratio:4.2f}x  "
          f"(target <= {TARGET}x: {'met' if ratio <= TARGET else 'MISSED'})")
    print(f"  NVIDIA nvidia-smi -L, 8 GPUs, MIG off        {off:7.2f} ms  {off / base:4.2f}x")
    return 0 if ratio <= TARGET and devices == 56 else 1


if __name__ == "__main__":
    raise SystemExit(main())
