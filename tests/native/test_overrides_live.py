"""An override written while a process runs is seen within a second, and goes away with the file."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

from mokka.core import names
from mokka.engine import flatstate
from mokka.core import profile as prof
from tests.corpus import dynamic_cases
from tests.corpus import engine_cases as corpus
from tests.native.conftest import SANITIZER_PRELOAD, clean_env, start_probe
from tests.native.hostile import node_env, stage_node


@contextlib.contextmanager
def watching(nvml_lib, tmp_path, profile: str, overrides: dict | None, index: str, until: str):
    """A probe process printing each new name of GPU ``index``: (config dir, lines, process)."""
    env = corpus.stage(corpus.Case("live", profile, (), overrides=overrides), str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    proc = start_probe(nvml_lib, env, "watch", index, until)
    try:
        yield config_dir, _lines(proc), proc
    finally:
        proc.kill()
        proc.wait()


def _lines(proc) -> queue.Queue:
    q: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stdout:
            q.put((time.monotonic(), json.loads(line)))
    threading.Thread(target=pump, daemon=True).start()
    return q


def test_override_written_while_running_is_seen_within_a_second(nvml_lib, tmp_path):
    with watching(nvml_lib, tmp_path, "h100", None, "1", "Back Again") as (config_dir, lines, proc):
        _, ready = lines.get(timeout=30)
        assert ready == ["ready", "NVIDIA H100 80GB HBM3"]
        for name in ("Live Name", "Second Name"):
            written = time.monotonic()
            corpus.write_overrides(config_dir, {1: f"name: {name}\n"})
            seen_at, line = lines.get(timeout=5)
            assert line == ["name", name]
            assert seen_at - written < 1.0
        written = time.monotonic()
        os.unlink(os.path.join(corpus.overrides_dir(config_dir), "gpu1.yaml"))
        corpus.write_overrides(config_dir, {None: "name: Back Again\n"})
        seen_at, line = lines.get(timeout=5)
        assert line == ["name", "Back Again"] and seen_at - written < 1.0
        proc.wait(timeout=30)
        assert proc.returncode == 0
        assert proc.stderr.read() == ""


def test_the_document_of_every_gpu_rewritten_alone_while_running_is_seen(nvml_lib, tmp_path):
    with watching(nvml_lib, tmp_path, "h100", {None: "name: First For All\n"}, "1", "Second For All") as (
            config_dir, lines, proc):
        _, ready = lines.get(timeout=30)
        assert ready == ["ready", "First For All"]
        corpus.write_overrides(config_dir, {None: "name: Second For All\n"})
        _, line = lines.get(timeout=5)
        assert line == ["name", "Second For All"]
        proc.wait(timeout=30)
        assert proc.returncode == 0 and proc.stderr.read() == ""


def test_removing_the_document_restores_the_profile(nvml_lib, tmp_path):
    with watching(nvml_lib, tmp_path, "a100", {0: "name: Overridden\n"},
                  "0", "NVIDIA A100-SXM4-40GB") as (config_dir, lines, proc):
        _, ready = lines.get(timeout=30)
        assert ready == ["ready", "Overridden"]
        written = time.monotonic()
        os.unlink(os.path.join(corpus.overrides_dir(config_dir), "gpu0.yaml"))
        seen_at, line = lines.get(timeout=5)
        assert line == ["name", "NVIDIA A100-SXM4-40GB"] and seen_at - written < 1.0
        proc.wait(timeout=30)


def test_overrides_left_stale_while_running_warn_once_and_are_dropped(nvml_lib, tmp_path):
    with watching(nvml_lib, tmp_path, "a100", {0: "name: Overridden\n"},
                  "0", "NVIDIA A100-SXM4-40GB") as (config_dir, lines, proc):
        _, ready = lines.get(timeout=30)
        assert ready == ["ready", "Overridden"]
        overrides = os.path.join(corpus.overrides_dir(config_dir), "gpu0.yaml")
        written = time.monotonic()
        with open(overrides, "a") as f:              # edited by hand, never compiled
            f.write("# edited\n")
        seen_at, line = lines.get(timeout=5)
        assert line == ["name", "NVIDIA A100-SXM4-40GB"]
        assert seen_at - written > 0.9               # a writer gets a second to rename the pair
        proc.wait(timeout=30)
        assert proc.stderr.read() == (f"mock NVML: ignoring overrides {overrides}: {overrides[:-5]}.nvml: "
                                      "stale: not compiled from this YAML: "
                                      f"run 'mokka compile --companion {overrides}'\n")


@pytest.mark.parametrize("named", ["at nvmlInit", "while running"])
def test_a_stale_file_already_named_does_not_hold_back_another_gpus_override(nvml_lib, tmp_path, named):
    env = corpus.stage(corpus.Case("live", "a100", (), overrides={0: "name: Zero\n"}), str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    stale = os.path.join(corpus.overrides_dir(config_dir), "gpu0.yaml")

    def edit_by_hand():                              # a YAML newer than its companion, never compiled
        with open(stale, "a") as f:
            f.write("# edited\n")
    if named == "at nvmlInit":
        edit_by_hand()
    proc = start_probe(nvml_lib, env, "watch", "1", "One")
    try:
        lines = _lines(proc)
        _, ready = lines.get(timeout=30)
        assert ready == ["ready", "NVIDIA A100-SXM4-40GB"]
        if named == "while running":
            edit_by_hand()
        warning = proc.stderr.readline()             # at once at init; else once its writer's second is up
        assert warning.startswith(f"mock NVML: ignoring overrides {stale}: ")
        written = time.monotonic()
        corpus.write_overrides(config_dir, {1: "name: One\n"})
        seen_at, line = lines.get(timeout=5)
        assert line == ["name", "One"]
        assert seen_at - written < 0.9               # gpu0's pair, named already, is not waited on again
        proc.wait(timeout=30)
        assert proc.returncode == 0 and proc.stderr.read() == ""
    finally:
        proc.kill()
        proc.wait()


IN_FLIGHT = r"""
import ctypes, json, time
lib = ctypes.CDLL("libnvidia-ml.so.1")
assert lib.nvmlInit_v2() == 0
h, buf, seen = ctypes.c_void_p(), ctypes.create_string_buffer(96), []
assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
for look in range(2):                          # within the writer's second, then past it
    assert lib.nvmlDeviceGetName(h, buf, 96) == 0
    seen.append(buf.value.decode())
    time.sleep(1.3)
print(json.dumps(seen))
"""


def test_a_write_in_flight_at_init_reads_as_no_overrides_until_its_second_is_up(nvml_lib, tmp_path):
    env = corpus.stage(corpus.Case("flight", "a100", (), overrides={0: "name: Zero\n"}), str(tmp_path))
    yaml_path = os.path.join(corpus.overrides_dir(os.path.dirname(env[names.ENV_NVML_CONFIG])), "gpu0.yaml")
    companion = os.stat(flatstate.companion_path(yaml_path))
    with open(yaml_path, "w") as f:               # the new YAML, its companion not renamed in yet
        f.write("name: Next\n")
    os.utime(yaml_path, ns=(companion.st_atime_ns, companion.st_mtime_ns - 10**9))
    res = subprocess.run([sys.executable, "-c", IN_FLIGHT], env=clean_env(nvml_lib, env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"]
    assert res.stderr == (f"mock NVML: ignoring overrides {yaml_path}: {yaml_path[:-5]}.nvml: "
                          "stale: not compiled from this YAML: "
                          f"run 'mokka compile --companion {yaml_path}'\n")


REINIT = r"""
import ctypes, json, os, sys
lib = ctypes.CDLL("libnvidia-ml.so.1")
names = []
for step in range(2):
    assert lib.nvmlInit_v2() == 0
    h, buf = ctypes.c_void_p(), ctypes.create_string_buffer(96)
    assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
    assert lib.nvmlDeviceGetName(h, buf, 96) == 0
    names.append(buf.value.decode())
    assert lib.nvmlShutdown() == 0
    if step == 0:                              # recompiled as an agent swaps it: renames
        for new, old in zip(sys.argv[1::2], sys.argv[2::2]):
            os.replace(new, old)
print(json.dumps(names))
"""


def test_a_profile_recompiled_between_two_inits_is_what_the_second_sees(nvml_lib, tmp_path):
    # The same length of state, other bytes: the new node is not taken for the old one.
    text = prof.load("h100").text.decode()
    (tmp_path / "a.yaml").write_text(text)
    (tmp_path / "b.yaml").write_text(text.replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM4"))
    env = corpus.stage(corpus.Case("reinit", str(tmp_path / "a.yaml"), ()), str(tmp_path / "a"))
    profile = env[names.ENV_NVML_CONFIG]
    new_profile = corpus.stage(corpus.Case("reinit", str(tmp_path / "b.yaml"), ()),
                               str(tmp_path / "b"))[names.ENV_NVML_CONFIG]
    assert os.path.getsize(flatstate.companion_path(new_profile)) == os.path.getsize(flatstate.companion_path(profile))
    res = subprocess.run([sys.executable, "-c", REINIT, new_profile, profile, flatstate.companion_path(new_profile),
                          flatstate.companion_path(profile)], env=clean_env(nvml_lib, env), capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM4"]


ENV_STEPS = r"""
import ctypes, json, os, sys
lib = ctypes.CDLL("libnvidia-ml.so.1")
variable, reading, values = sys.argv[1], sys.argv[2], sys.argv[3:]
seen = []
for value in values:                           # one nvmlInit per value of the variable
    os.environ[variable] = value
    assert lib.nvmlInit_v2() == 0
    h = ctypes.c_void_p()
    assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
    if reading == "temperature":
        t = ctypes.c_uint()
        assert lib.nvmlDeviceGetTemperature(h, 0, ctypes.byref(t)) == 0
        seen.append(t.value)
    else:
        buf = ctypes.create_string_buffer(96)
        assert lib.nvmlDeviceGetName(h, buf, 96) == 0
        seen.append(buf.value.decode())
    assert lib.nvmlShutdown() == 0
print(json.dumps(seen))
"""


def test_a_second_pinned_anew_between_two_inits_is_the_one_read(nvml_lib, tmp_path):
    # The chart baseline's GPU 0: 69 C at t=60, 55 C at t=15 (tests/corpus/dynamic_cases.py).
    env = dynamic_cases.stage(dynamic_cases.VECTORS[1], str(tmp_path))
    res = subprocess.run([sys.executable, "-c", ENV_STEPS, names.ENV_NVML_CLOCK, "temperature", "60", "15", "60"],
                         env=clean_env(nvml_lib, env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [69, 55, 69]


DEVICE_NODES = r"""
import ctypes, json, os, sys
lib = ctypes.CDLL("libnvidia-ml.so.1")
seen = []
for step in range(2):
    assert lib.nvmlInit_v2() == 0
    count, minors = ctypes.c_uint(), []
    assert lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0
    for i in range(count.value):
        h, minor = ctypes.c_void_p(), ctypes.c_uint()
        assert lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) == 0
        assert lib.nvmlDeviceGetMinorNumber(h, ctypes.byref(minor)) == 0
        minors.append(minor.value)
    seen.append(minors)
    assert lib.nvmlShutdown() == 0
    if step == 0:
        os.rename(sys.argv[1], sys.argv[2])
print(json.dumps(seen))
"""


def test_a_device_node_swapped_for_another_between_two_inits_moves_the_visible_gpu(nvml_lib, tmp_path):
    # As many nodes present before as after, other ones: the second init lists the new set.
    env = corpus.stage(corpus.Case("nodes", "h100", ()), str(tmp_path / "node"))
    dev = tmp_path / "devroot" / "dev"
    dev.mkdir(parents=True)
    for minor in (0, 1):
        (dev / f"nvidia{minor}").touch()
    env[names.ENV_DEV_ROOT] = str(tmp_path / "devroot")
    res = subprocess.run([sys.executable, "-c", DEVICE_NODES, str(dev / "nvidia1"), str(dev / "nvidia5")],
                         env=clean_env(nvml_lib, env), capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [[0, 1], [0, 5]]


FABRIC_STEPS = r"""
import json, os, sys
from tests.native import probe
seen, moves = [], sys.argv[1:]
for step in range(len(moves) // 2 + 1):
    probe.n.nvmlInit()
    seen.append(probe.fabric(probe.n.nvmlDeviceGetHandleByIndex(0))[1:3])
    probe.n.nvmlShutdown()
    if step < len(moves) // 2:
        directory = moves[2 * step]
        for name in os.listdir(directory):
            os.replace(os.path.join(directory, name), os.path.join(moves[2 * step + 1], name))
print(json.dumps(seen))
"""


def test_a_topology_changed_between_two_inits_gives_the_next_its_clique_then_its_domain(nvml_lib, tmp_path):
    # worker-3's clique 7 becomes 6, then rack A's uuid ...CD becomes ...CC: one field at a time,
    # each a profile pair compiled again with the new document, as the agent writes it.
    (tmp_path / "host").mkdir()
    config_dir = stage_node(str(tmp_path / "host"))
    profile = os.path.join(str(tmp_path / "host"), "h100x2.yaml")
    steps = []
    for i, text in enumerate([corpus.TOPOLOGY.replace("id: 7", "id: 6"),
                              corpus.TOPOLOGY.replace("id: 7", "id: 6").replace("0CD", "0CC")]):
        staged = corpus.stage(corpus.Case(f"step{i}", profile, (), topology=text, node_name="worker-3"),
                              str(tmp_path / f"staged{i}"))[names.ENV_NVML_CONFIG]
        step = tmp_path / f"step{i}"
        step.mkdir()
        for name in (names.PROFILE_FILE, os.path.basename(flatstate.companion_path(names.PROFILE_FILE))):
            os.replace(os.path.join(os.path.dirname(staged), name), step / name)
        steps += [str(step), config_dir]
    res = subprocess.run([sys.executable, "-c", FABRIC_STEPS, *steps], env=clean_env(nvml_lib, node_env(config_dir)),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [[7, "00000000-0000-0000-0000-0000000000cd"],
                                      [6, "00000000-0000-0000-0000-0000000000cd"],
                                      [6, "00000000-0000-0000-0000-0000000000cc"]]


def test_a_node_named_anew_between_two_inits_is_read_with_its_own_overrides(nvml_lib, tmp_path):
    # Two stagings of one profile, byte-identical states: only the second's GPU 0 is renamed.
    first = corpus.stage(corpus.Case("one", "h100", ()), str(tmp_path / "one"))[names.ENV_NVML_CONFIG]
    second = corpus.stage(corpus.Case("two", "h100", (), overrides={0: "name: Second Node\n"}),
                          str(tmp_path / "two"))[names.ENV_NVML_CONFIG]
    env = {names.ENV_NVML_CONFIG: first}
    res = subprocess.run([sys.executable, "-c", ENV_STEPS, names.ENV_NVML_CONFIG, "name", first, second, first],
                         env=clean_env(nvml_lib, env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == ["NVIDIA H100 80GB HBM3", "Second Node", "NVIDIA H100 80GB HBM3"]


SAME_HANDLES = r"""
import ctypes, json
lib = ctypes.CDLL("libnvidia-ml.so.1")


def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


seen, rss = [], []
for step in range(300):
    assert lib.nvmlInit_v2() == 0
    count, handles = ctypes.c_uint(), []
    assert lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0
    for i in range(count.value):
        h = ctypes.c_void_p()
        assert lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) == 0
        handles.append(h.value)
    seen.append(handles)
    assert lib.nvmlShutdown() == 0
    if step in (0, 299):
        rss.append(rss_kib())
print(json.dumps([seen[0], seen[1], seen[-1], rss[1] - rss[0]]))
"""


def test_a_node_unchanged_between_inits_is_the_one_kept_and_warns_once(nvml_lib, tmp_path):
    # As NVIDIA's: a handle names one GPU for the life of the process. A process that inits
    # again and again (a device plugin's health check) keeps its node, so a stale overrides
    # file is named once, not at every init. gb300 in a topology clique, with its fabric
    # waiting on the marker, reads every part of the node.
    case = corpus.Case("same", "gb300", (), node_name="worker-3",
                       topology=corpus.TOPOLOGY, fabricmanager_ready=False, overrides={0: "name: Old\n"})
    env = corpus.stage(case, str(tmp_path))
    overrides = os.path.join(corpus.overrides_dir(os.path.dirname(env[names.ENV_NVML_CONFIG])), "gpu0.yaml")
    with open(overrides, "a") as f:
        f.write("# edited by hand, never compiled\n")
    res = subprocess.run([sys.executable, "-c", SAME_HANDLES], env=clean_env(nvml_lib, env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    first, second, last, grown_kib = json.loads(res.stdout)
    assert len(first) == 8 and len(set(first)) == 8
    assert first == second == last
    if not os.environ.get(SANITIZER_PRELOAD):    # ASan holds freed memory back: its RSS says nothing
        assert grown_kib < 4096                  # a node kept, not 299 more of them (each 100 KB+)
    assert res.stderr == (f"mock NVML: ignoring overrides {overrides}: {overrides[:-5]}.nvml: "
                          "stale: not compiled from this YAML: "
                          f"run 'mokka compile --companion {overrides}'\n")
