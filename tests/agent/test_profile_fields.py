"""A typo that leaves the GPUs without a name or a memory size (what every nvidia-smi
prints) is refused in one line by the node agent and compile, naming the key meant; a key
the format does not know is otherwise only a warning (Go Mokka files carry keys Mokka
ignores) that names the nearest known key."""

from __future__ import annotations

import json
import os

import pytest
from helpers import profile_bytes, run_agent
from treelist import diff, listing

from tests.conftest import run_mokka


def typo(outside: str, old: bytes, new: bytes, name: str = "typo.yaml") -> str:
    """The built-in t4 profile (4 GPUs, every field in device_defaults) with one key retyped."""
    text = profile_bytes("t4")
    assert text.count(old) == 1
    path = os.path.join(outside, name)
    with open(path, "wb") as f:
        f.write(text.replace(old, new))
    return path


def refuse(command: str, root: str, profile: str):
    if command == "node-agent":
        return run_agent(root, "--once", "--health-addr", "", "--profile", profile)
    return run_mokka("compile", "--profile", profile)


@pytest.mark.parametrize("command", ["node-agent", "compile"])
def test_a_typo_for_name_is_refused_in_one_line_naming_the_file_the_key_and_the_fix(scratch, command):
    root, outside, _ = scratch
    bad = typo(outside, b'\n  name: "NVIDIA T4"', b'\n  nmae: "NVIDIA T4"')
    before = listing(root)
    done = refuse(command, root, bad)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"{command}: {bad}: device_defaults.name: device_defaults.nmae is not a profile key: "
        "did you mean name? As written 4 of 4 GPUs have no name, which nvidia-smi prints; set "
        "name in device_defaults or in each entry of devices")
    after = listing(root)
    assert after == before, diff(before, after)          # nothing staged, the lock freed


def test_one_gpu_without_a_memory_size_is_refused_naming_that_gpu(scratch):
    _, outside, _ = scratch
    text = profile_bytes("t4").replace(b"  memory:\n    total_bytes: 17179869184\n",
                                       b"  memory:\n    totl_bytes: 17179869184\n")
    # GPU 0 gives its own memory block (replacing the defaults'); GPUs 1-3 have none.
    text = text.replace(b"\n  - index: 0\n", b"\n  - index: 0\n    memory: {total_bytes: 17179869184}\n", 1)
    bad = os.path.join(outside, "bad.yaml")
    with open(bad, "wb") as f:
        f.write(text)
    done = run_mokka("compile", "--profile", bad)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"compile: {bad}: devices[index=1].memory.total_bytes: device_defaults.memory.totl_bytes "
        "is not a profile key: did you mean total_bytes? As written 3 of 4 GPUs have no "
        "memory.total_bytes, which nvidia-smi prints; set memory.total_bytes in device_defaults "
        "or in each entry of devices"]


@pytest.mark.parametrize("text,names", [
    ('version: "1.0"\nsystem: {driver_version: "550.163.01"}\n'
     "device_defaults: {memory: {total_bytes: 1073741824}}\n"
     'devices:\n- {index: 0, name: "NVIDIA T4"}\n- {index: 1, name: "NVIDIA T4"}\n',
     ["NVIDIA T4", "NVIDIA T4"]),
    ('version: "1.0"\nsystem: {driver_version: "550.163.01", num_devices: 2}\n'
     "device_defaults: {shiny: 1}\n", [None, None]),
], ids=["names given per GPU, no UUIDs", "a minimal profile with no typo"])
def test_profiles_without_a_typo_compile(scratch, text, names):
    """Positive controls: names may come per GPU and UUIDs are derived; a profile that leaves
    the fields out altogether (as a minimal one does) still compiles."""
    _, outside, _ = scratch
    good = os.path.join(outside, "good.yaml")
    with open(good, "w") as f:
        f.write(text)
    done = run_mokka("compile", "--profile", good)
    assert done.returncode == 0, done.stderr
    gpus = json.loads(done.stdout)["gpus"]
    assert [g.get("name") for g in gpus] == names
    assert all(g["uuid"].startswith("GPU-") for g in gpus)


def test_an_unknown_key_is_a_warning_naming_the_nearest_known_key_and_the_node_stages(scratch):
    root, outside, _ = scratch
    odd = typo(outside, b'\n  brand: "nvidia"', b'\n  brnad: "nvidia"')
    done = run_agent(root, "--once", "--health-addr", "", "--profile", odd)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "does not know" in line]
    assert len(warned) == 1 and " warn " in warned[0]
    assert "keys=['device_defaults.brnad']" in warned[0]
    assert "did_you_mean={'device_defaults.brnad': 'brand'}" in warned[0]
    assert run_agent(root, "--teardown").returncode == 0
