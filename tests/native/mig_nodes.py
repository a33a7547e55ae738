"""MIG boards for the library's tests: a compiled profile in a folder of its own (so its
mig.nvml is its own), and the processes that read and change it.

    board(root, "h100", mig="enabled", layout=[...])   -> env of a process on that node
    probe(lib_dir, env, *args)                          tests/native/probe_mig.py's JSON
    nvidia_smi(lib_dir, env, *args)                     NVIDIA's nvidia-smi 550 over the same
"""

from __future__ import annotations

import os
import subprocess

import yaml

from mokka.core import compile as comp
from mokka.core import names
from mokka.engine import flatstate
from mokka.core import profile as prof
from tests.native.conftest import HERE, clean_env, run_probe
from tests.peers import peer

PROBE = os.path.join(HERE, "probe_mig.py")
LAYOUT = "mokka-test-layout"
#: What pynvml's errors carry (nvml.h).
INVALID_ARGUMENT, NOT_SUPPORTED, NOT_FOUND, IN_USE, INSUFFICIENT_RESOURCES = 2, 3, 6, 19, 23


def board(root: str, profile: str, mig: str | None = None, layout: list | None = None,
          dev_nodes: tuple = (), caps: tuple = ()) -> dict:
    """Stage `profile` under root (its MIG modes `mig`, booting with the GPU instances
    `layout`), with /dev/nvidiaN for `dev_nodes` and /dev/nvidia-caps/nvidia-cap<N> for
    `caps` under the process's dev root; the environment of a process there."""
    doc = yaml.safe_load(prof.load(profile).text)
    block = doc["device_defaults"]["mig"]
    if mig:
        block["mode_current"] = block["mode_pending"] = mig
    if layout:
        block["layouts"] = [*(block.get("layouts") or []), {"name": LAYOUT, "gpu_instances": list(layout)}]
        block["layout"] = LAYOUT
    config_dir = os.path.join(root, "config")
    os.makedirs(config_dir, exist_ok=True)
    config = os.path.join(config_dir, names.PROFILE_FILE)
    with open(config, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    loaded = prof.load(config)
    with open(flatstate.companion_path(config), "wb") as f:
        f.write(flatstate.state_companion(comp.compile_profile(loaded)))
    dev = os.path.join(root, "devroot", "dev")
    os.makedirs(os.path.join(dev, names.NVIDIA_CAPS_DEV_NAME), exist_ok=True)
    for minor in dev_nodes:
        open(os.path.join(dev, names.gpu_node_name(minor)), "w").close()
    for minor in caps:
        open(os.path.join(dev, names.NVIDIA_CAPS_DEV_NAME, f"{names.NVIDIA_CAP_PREFIX}{minor}"), "w").close()
    return {names.ENV_NVML_CONFIG: config, names.ENV_DEV_ROOT: os.path.dirname(dev)}


def state_file(env: dict) -> str:
    return os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), names.MIG_STATE_FILE)


def probe(lib_dir: str, env: dict, *args: str, timeout: float = 60) -> dict:
    return run_probe(lib_dir, env, *args, timeout=timeout, probe=PROBE)[0]


def nvidia_smi(lib_dir: str, env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([peer("NVIDIA_SMI"), *args], capture_output=True, text=True, timeout=timeout,
                          env=clean_env(lib_dir, env))


def enable(lib_dir: str, env: dict, gpus: str = "0") -> None:
    """-mig 1 and the reset that makes it current, as an administrator does it."""
    for args in (("-i", gpus, "-mig", "1"), ("-r", "-i", gpus)):
        done = nvidia_smi(lib_dir, env, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
