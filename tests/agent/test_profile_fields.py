"""A profile whose GPUs would stage without a name or a memory size (what every nvidia-smi
prints) is refused in one line by every command that loads it, naming the file, the first
GPU lacking the field and where to set it; when a typo explains the gap, the line names the
key meant. A key the format does not know is otherwise only a warning (Go Mokka files carry
keys Mokka ignores) that names the nearest known key. The UUID, the third field nvidia-smi
always prints, is derived for a GPU that has none."""

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


HEAD = 'version: "1.0"\nsystem: {driver_version: "550.163.01"}\n'


@pytest.mark.parametrize("command", ["node-agent", "compile", "render-cdi"])
@pytest.mark.parametrize("text,line", [
    (HEAD + "device_defaults: {memory: {total_bytes: 17179869184}}\n"
     "devices:\n- {index: 0}\n- {index: 1}\n",
     "devices[index=0].name: GPU 0 has no name (2 of 2 GPUs have none), which nvidia-smi "
     "prints; set device_defaults.name, or name in each entry of devices"),
    (HEAD + 'device_defaults: {name: "NVIDIA T4"}\n'
     "devices:\n- {index: 0, memory: {total_bytes: 17179869184}}\n- {index: 1}\n",
     "devices[index=1].memory.total_bytes: GPU 1 has no memory.total_bytes, which nvidia-smi "
     "prints; set device_defaults.memory.total_bytes, or memory.total_bytes in each entry of "
     "devices"),
    (HEAD + 'device_defaults: {name: "NVIDIA T4", memory: {total_bytes: 17179869184}}\n'
     "devices:\n- {index: 0}\n- {index: 1, memory: {used_bytes: 0}}\n",
     "devices[index=1].memory.total_bytes: GPU 1 has no memory.total_bytes, which nvidia-smi "
     "prints; set memory.total_bytes in its entry of devices (its memory block replaces "
     "device_defaults.memory)"),
], ids=["no name", "no memory size", "a memory block without the size"])
def test_a_gpu_without_a_printed_field_is_refused_in_one_line(scratch, command, text, line):
    root, outside, _ = scratch
    bad = os.path.join(outside, "bad.yaml")
    with open(bad, "w") as f:
        f.write(text)
    before = listing(root)
    if command == "render-cdi":
        done = run_mokka("render-cdi", "--profile", bad, "--out", outside)
    else:
        done = refuse(command, root, bad)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == f"{command}: {bad}: {line}"
    if command != "node-agent":
        assert done.stderr.splitlines() == [f"{command}: {bad}: {line}"]
    assert sorted(os.listdir(outside)) == ["bad.yaml"]
    after = listing(root)
    assert after == before, diff(before, after)          # nothing staged, the lock freed


def test_names_given_per_gpu_compile_and_uuids_are_derived(scratch):
    """Positive control: a name may come in each GPU's entry, and a GPU without a UUID gets
    one, so no profile is refused for want of a UUID."""
    _, outside, _ = scratch
    good = os.path.join(outside, "good.yaml")
    with open(good, "w") as f:
        f.write(HEAD + "device_defaults: {memory: {total_bytes: 1073741824}}\n"
                'devices:\n- {index: 0, name: "NVIDIA T4"}\n- {index: 1, name: "NVIDIA L4"}\n')
    done = run_mokka("compile", "--profile", good)
    assert done.returncode == 0, done.stderr
    gpus = json.loads(done.stdout)["gpus"]
    assert [(g["name"], g["memory"]["total_bytes"]) for g in gpus] == [
        ("NVIDIA T4", 1073741824), ("NVIDIA L4", 1073741824)]
    assert [g["uuid"][:4] for g in gpus] == ["GPU-", "GPU-"]
    assert gpus[0]["uuid"] != gpus[1]["uuid"]


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
