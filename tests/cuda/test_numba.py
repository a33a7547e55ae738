"""numba-cuda and NVIDIA's cuda-bindings over a node the real agent staged, for every
built-in profile: the libraries found the overlay's way (LD_LIBRARY_PATH at its lib64, as
the NRI plugin sets it), no MOCK_NVML_CONFIG. CUDA's devices are NVML's; the board values
are the facts table's; 100 MB round-trip through `to_device`; the visibility variables
narrow CUDA as the rules say; a `@cuda.jit` kernel launches (and nothing executes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mokka.core import names
from tests.cuda.facts import BOARDS
from tests.native.staged import nvml_build, staged_node  # noqa: F401  (fixtures)

HERE = os.path.dirname(os.path.abspath(__file__))


def run(node, script: str, *args: str, **env) -> dict:
    full = node.env(**{names.ENV_LD_LIBRARY_PATH: node.overlay.lib, **env})
    for name in (names.ENV_CUDA_VISIBLE_DEVICES, names.ENV_CUDA_DEVICE_ORDER):
        if name not in env:
            full.pop(name, None)
    done = subprocess.run([sys.executable, os.path.join(HERE, script), *args], env=full, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("profile", names.BUILTIN_PROFILES)
def test_numba_and_cuda_bindings_see_nvmls_gpus_with_the_boards_values(staged_node, profile):
    node = staged_node(profile, nvidia_smi=False)
    seen = run(node, "numba_probe.py", "100")
    assert seen["available"] and seen["round_trip"]
    nvml = seen["nvml"]
    assert [d["id"] for d in seen["devices"]] == list(range(len(nvml)))
    assert [(d["name"], d["uuid"], d["pci"]) for d in seen["devices"]] == \
        [(g["name"], g["uuid"], g["pci"]) for g in nvml]
    cc, sms, *_ = BOARDS[profile]
    assert {tuple(d["cc"]) for d in seen["devices"]} == {cc}
    if sms is not None:
        assert {d["sms"] for d in seen["devices"]} == {sms}
    bindings = run(node, "probe.py", "devices")
    assert bindings["count"] == len(nvml)
    assert [d["name"] for d in bindings["devices"]] == [g["name"] for g in nvml]
    assert ["GPU-{}-{}-{}-{}-{}".format(u[:8], u[8:12], u[12:16], u[16:20], u[20:])
            for u in (d["uuid"] for d in bindings["devices"])] == [g["uuid"] for g in nvml]


#: h100's GPUs as the profile names them.
H100 = [f"GPU-01000100-0000-0000-0000-00000000000{n}" for n in range(8)]


@pytest.mark.parametrize("env, want", [
    ({names.ENV_CUDA_VISIBLE_DEVICES: "1"}, [H100[1]]),
    ({names.ENV_CUDA_VISIBLE_DEVICES: H100[3]}, [H100[3]]),
    ({names.ENV_CUDA_VISIBLE_DEVICES: "GPU-01000100"}, []),      # a prefix of every GPU: ambiguous
    ({names.ENV_CUDA_VISIBLE_DEVICES: ""}, []),
    ({names.ENV_NVML_VISIBLE_DEVICES: "none"}, []),
], ids=["an index", "a UUID", "an ambiguous prefix", "empty", "MOCK_NVML_VISIBLE_DEVICES=none"])
def test_visibility_narrows_what_numba_sees(staged_node, env, want):
    seen = run(staged_node("h100", nvidia_smi=False), "numba_probe.py", **env)
    assert seen["available"] == bool(want)
    assert [d["uuid"] for d in seen["devices"]] == want


def test_a_numba_kernel_launches_and_nothing_executes(staged_node):
    """A `@cuda.jit` kernel doubling an array: numba-cuda compiles it through NVRTC (PyPI's
    nvidia-cuda-nvrtc-cu12, found on its own), links it through the driver's cuLink* calls
    and launches it; the launch and `cuda.synchronize()` succeed, but nothing executes, so
    the array copied back is the one sent."""
    seen = run(staged_node("h100", nvidia_smi=False), "numba_probe.py", "kernel")
    assert seen == {"launched": True, "synchronized": True, "unchanged": True}
