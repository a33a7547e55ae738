"""What a workload that writes driver/config can do to the library's consumers: each attack
on a reader as a case against real processes (pynvml through tests/native/probe.py, and
NVIDIA's nvidia-smi 550). Consumers keep answering with the last good state or a clean
error, in one line naming the file and the reason, and never a value read from it."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading

import pytest

from mokka.core import names, xid
from tests.corpus import engine_cases as corpus
from tests.native.conftest import PROBE, clean_env, run_probe, start_probe
from tests.native.hostile import (OVERRIDDEN, answered, drop_lines, node_env, restated, set_lines,
                                  stage_node, write_events)
from tests.peers import peer

DRIVER_NOT_LOADED = 9
NOT_SUPPORTED = 3
NO_PERMISSION = 4
XID_CRITICAL = 8
PROFILE_NAME = "NVIDIA H100 80GB HBM3"
RACK_A_CLIQUE = 7                                 # corpus.TOPOLOGY: worker-3's clique


@pytest.fixture
def node(tmp_path) -> str:
    return stage_node(str(tmp_path))


def survey(nvml_lib: str, config_dir: str) -> tuple[dict, str]:
    run = answered([sys.executable, PROBE, "survey"], clean_env(nvml_lib, node_env(config_dir)))
    assert run.returncode == 0, (run.returncode, run.stderr)
    return json.loads(run.stdout.splitlines()[-1]), run.stderr


def _path(node: str, name: str) -> str:
    return os.path.join(node, name)


def _swap(path: str, make) -> None:
    os.unlink(path)
    make(path)


# --- FIFOs ----------------------------------------------------------------------------

IGNORED = {  # a FIFO here: the document is ignored, the rest of the node answers
    "overrides/all.yaml": "overrides", "overrides/gpu1.nvml": "overrides",
    "xid-events.yaml": "Xid events", "xid-events.nvml": "Xid events",
}


@pytest.mark.parametrize("name", ["config.yaml", "config.nvml"])
def test_a_fifo_for_the_profile_fails_init_at_once_in_one_line(nvml_lib, node, name):
    path = _path(node, name)
    _swap(path, os.mkfifo)
    seen, stderr = survey(nvml_lib, node)
    assert seen == {"init": DRIVER_NOT_LOADED}
    config = _path(node, "config.yaml")
    if name == "config.yaml":
        assert stderr == (f"mock NVML: cannot read {config} (a FIFO, not a regular file): "
                          "set MOCK_NVML_CONFIG to a readable profile\n")
    else:
        assert stderr == (f"mock NVML: {config} has no compiled state ({path}: a FIFO, not a regular file): "
                          f"run 'mokka compile --companion {config}'\n")


@pytest.mark.parametrize("name", list(IGNORED))
def test_a_fifo_for_any_other_document_is_ignored_in_one_line(nvml_lib, node, name):
    path = _path(node, name)
    _swap(path, os.mkfifo)
    seen, stderr = survey(nvml_lib, node)
    assert seen["init"] == 0 and len(seen["gpus"]) == 2
    yaml = path[:-5] + ".yaml" if path.endswith(".nvml") else path
    named = f"{path}: " if path.endswith(".nvml") else ""
    hint = f": run 'mokka compile --companion {yaml}'" if named and IGNORED[name] != "Xid events" else ""
    assert stderr == f"mock NVML: ignoring {IGNORED[name]} {yaml}: {named}a FIFO, not a regular file{hint}\n"
    if name.startswith("overrides/gpu1"):
        assert seen["gpus"][1]["Name"] == PROFILE_NAME


def test_the_profile_and_its_compiled_topology_answer_when_nothing_is_spoilt(nvml_lib, node):
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][1]["Name"] == OVERRIDDEN
    assert {g["Fabric"][1] for g in seen["gpus"]} == {RACK_A_CLIQUE}


def _lines(proc) -> queue.Queue:
    q: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stdout:
            q.put(json.loads(line))
    threading.Thread(target=pump, daemon=True).start()
    return q


def test_a_running_consumer_swapped_onto_fifos_keeps_answering_and_sees_what_comes_after(nvml_lib, node):
    env = node_env(node)
    proc = start_probe(nvml_lib, env, "watch", "1", "After The FIFO")
    try:
        lines = _lines(proc)
        assert lines.get(timeout=60) == ["ready", OVERRIDDEN]
        overrides = _path(node, "overrides")
        for name in ("gpu1.yaml", "gpu1.nvml", "all.yaml", "all.nvml"):
            _swap(os.path.join(overrides, name), os.mkfifo)
        assert lines.get(timeout=30) == ["name", PROFILE_NAME]          # the scope ignored, not stuck
        for name in ("gpu1.yaml", "gpu1.nvml", "all.yaml", "all.nvml"):
            os.unlink(os.path.join(overrides, name))
        corpus.write_overrides(node, {1: "name: After The FIFO\n"})
        assert lines.get(timeout=30) == ["name", "After The FIFO"]
        assert proc.wait(timeout=60) == 0
        warned = proc.stderr.read().splitlines()
        assert len(warned) == len(set(warned)) and all("a FIFO, not a regular file" in w for w in warned)
    finally:
        proc.kill()
        proc.wait()


def test_nvidia_smi_lists_the_gpus_with_fifos_for_every_document_but_the_profile(nvml_lib, node):
    for name in IGNORED:
        _swap(_path(node, name), os.mkfifo)
    env = clean_env(nvml_lib, node_env(node))
    run = answered([peer("NVIDIA_SMI"), "-L"], env)
    assert run.returncode == 0 and run.stdout.count("GPU ") == 2, run.stderr
    _swap(_path(node, "config.nvml"), os.mkfifo)
    run = answered([peer("NVIDIA_SMI"), "-L"], env)
    assert run.returncode is not None and run.returncode != 0 and "GPU-" not in run.stdout
    assert "a FIFO, not a regular file" in run.stderr


# --- numbers that drove loops ---------------------------------------------------------

@pytest.mark.parametrize("affinity", ["18446744073709551615", "0-18446744073709551615", "8192",
                                      "3-18446744073709551615"])
def test_a_cpu_affinity_past_any_machine_is_no_affinity(nvml_lib, node, affinity):
    corpus.write_overrides(node, {1: f"cpu_affinity: '{affinity}'\n"})
    seen, stderr = survey(nvml_lib, node)
    assert stderr == ""
    assert seen["gpus"][1]["CpuAffinity"] == ["err", NOT_SUPPORTED]
    assert seen["gpus"][0]["CpuAffinity"] != ["err", NOT_SUPPORTED]
    assert seen["gpu set cpu 0"] == 1                 # GPU 0's list still holds CPU 0


@pytest.mark.parametrize("line, reason", [
    (b"nvlink_links.len 1048576", "a list nvlink_links longer than 18 items"),
    (b"processes.len 1048576", "a list processes longer than 1024 items"),
    (b"supported_clocks.memory_clocks.len 4294967296",
     "a list supported_clocks.memory_clocks longer than 4096 items"),
])
def test_an_overrides_document_with_a_list_past_its_bound_is_ignored(nvml_lib, node, line, reason):
    set_lines(_path(node, "overrides/gpu1.nvml"), [line])
    seen, stderr = survey(nvml_lib, node)
    yaml = _path(node, "overrides/gpu1.yaml")
    assert stderr == (f"mock NVML: ignoring overrides {yaml}: {yaml[:-5]}.nvml: {reason}: "
                      f"run 'mokka compile --companion {yaml}'\n")
    assert seen["gpus"][1]["Name"] == PROFILE_NAME                    # the profile, not half a document
    assert seen["gpus"][1]["ComputeRunningProcesses"] == []
    assert seen["p2p"] == [[5, 0], [0, 5]]        # the profile's NVLinks: OK between the two, none to itself
    assert seen["gpus"][1]["NvLinkCount"] == 18


def test_a_state_with_a_list_past_its_bound_fails_init_in_one_line(nvml_lib, node):
    path = _path(node, "config.nvml")
    set_lines(path, [b"gpu.1.nvlink_links.len 1048576"])
    seen, stderr = survey(nvml_lib, node)
    config = _path(node, "config.yaml")
    assert seen == {"init": DRIVER_NOT_LOADED}
    assert stderr == (f"mock NVML: {config} has no compiled state ({path}: a list nvlink_links longer than 18 "
                      f"items): run 'mokka compile --companion {config}'\n")


def test_a_92_mib_overrides_companion_is_refused_unread(nvml_lib, node):
    before = answered([sys.executable, PROBE, "survey"], clean_env(nvml_lib, node_env(node)))
    path = _path(node, "overrides/all.nvml")
    os.truncate(path, 92 << 20)
    after = answered([sys.executable, PROBE, "survey"], clean_env(nvml_lib, node_env(node)))
    yaml = path[:-5] + ".yaml"
    assert after.returncode == 0 and after.stderr == (
        f"mock NVML: ignoring overrides {yaml}: {path}: larger than 65536 bytes: "
        f"run 'mokka compile --companion {yaml}'\n")
    assert after.max_rss < before.max_rss + (8 << 20)


@pytest.mark.parametrize("spoil", ["cut at a line boundary", "a value edited"])
def test_an_overrides_companion_edited_or_cut_is_ignored_whole(nvml_lib, node, spoil):
    path = _path(node, "overrides/gpu1.nvml")
    data = open(path, "rb").read()
    if spoil == "cut at a line boundary":
        data = data[:data.rindex(b"\n", 0, len(data) - 1) + 1]
    else:
        data = data.replace(OVERRIDDEN.encode(), b"Overwrites")            # the same length
    with open(path, "wb") as f:
        f.write(data)
    seen, stderr = survey(nvml_lib, node)
    yaml = path[:-5] + ".yaml"
    reason = "length" if spoil == "cut at a line boundary" else "checksum"
    assert stderr == (f"mock NVML: ignoring overrides {yaml}: {path}: truncated or edited: its {reason} is not "
                      f"the one its header states: run 'mokka compile --companion {yaml}'\n")
    assert seen["gpus"][1]["Name"] == PROFILE_NAME and seen["gpus"][1]["ComputeRunningProcesses"] == []


# --- Xid events -----------------------------------------------------------------------

def _event(seq: int, gpu: int, code: int) -> xid.Event:
    return xid.Event(seq, xid.Injection(gpu, f"GPU-{gpu}", f"00000000:{gpu + 16:02X}:00.0", code))


def _events(node: str, events: list, last: int, change=None) -> None:
    text, companion = xid.render(events, last)
    if change:
        companion = restated(companion, change(companion.split(b"\n", 3)[3]))
    write_events(node, text, companion)


def _read(proc, lines: queue.Queue):
    try:
        return lines.get(timeout=30)
    except queue.Empty:
        raise AssertionError(proc.stderr.read()) from None


def test_an_event_count_past_the_bound_is_refused_and_the_next_document_delivers(nvml_lib, node):
    proc = start_probe(nvml_lib, node_env(node), "xid", "1")
    try:
        lines = _lines(proc)
        assert _read(proc, lines) == ["ready"]
        _events(node, [_event(2, 0, 13)], 2, lambda b: b.replace(b"event.len 1", b"event.len 2147483648"))
        _events(node, [_event(3, 1, 79)], 3)
        assert _read(proc, lines) == {"index": 1, "type": XID_CRITICAL, "xid": 79, "gi": 0xFFFFFFFF}
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


REFUSED_INSTANCE = ("event 0 has a gi above 14 or a ci without a gi or above 7")


@pytest.mark.parametrize("spoil", [b"event.0.gi 15", b"event.0.gi 99999999999999999999", b"event.0.ci 0"],
                         ids=["gi past 14", "gi past 2^64", "ci without gi"])
def test_an_instance_id_past_migs_is_refused_whole_and_the_next_document_delivers(nvml_lib, node, spoil):
    proc = start_probe(nvml_lib, node_env(node), "xid", "1")
    try:
        lines = _lines(proc)
        assert _read(proc, lines) == ["ready"]
        _events(node, [_event(2, 0, 13)], 2, lambda b: b"\n".join(sorted([*b.split(b"\n")[:-1], spoil])) + b"\n")
        yaml = _path(node, names.XID_EVENTS_FILE)
        assert proc.stderr.readline() == (f"mock NVML: ignoring Xid events {yaml}: {yaml[:-5]}.nvml: "
                                          f"{REFUSED_INSTANCE}\n")
        _events(node, [_event(3, 1, 79)], 3)
        assert _read(proc, lines) == {"index": 1, "type": XID_CRITICAL, "xid": 79, "gi": 0xFFFFFFFF}
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("when", ["before the set", "after the set"])
def test_a_last_seq_of_2_64_stops_no_later_xid(nvml_lib, node, when):
    """The document is refused; its writer numbers afresh (replacing what it cannot trust),
    and the waiting set follows the new numbering instead of waiting past 2**64."""
    bad = lambda b: b.replace(b"last_seq 5", b"last_seq 18446744073709551615")   # noqa: E731
    _events(node, [_event(5, 0, 13)], 5)
    if when == "before the set":
        _events(node, [_event(5, 0, 13)], 5, bad)
    proc = start_probe(nvml_lib, node_env(node), "xid", "1")
    try:
        lines = _lines(proc)
        assert _read(proc, lines) == ["ready"]
        if when == "after the set":
            _events(node, [_event(5, 0, 13)], 5, bad)
        yaml = _path(node, names.XID_EVENTS_FILE)
        assert proc.stderr.readline() == (f"mock NVML: ignoring Xid events {yaml}: {yaml[:-5]}.nvml: last_seq is "
                                          "not a sequence number up to 9007199254740991\n")
        _events(node, [_event(1, 1, 94)], 1)                  # numbered afresh
        assert _read(proc, lines) == {"index": 1, "type": XID_CRITICAL, "xid": 94, "gi": 0xFFFFFFFF}
        assert proc.wait(timeout=60) == 0 and proc.stderr.read() == ""
    finally:
        proc.kill()
        proc.wait()


# --- links ------------------------------------------------------------------------------

def test_a_profile_linked_to_a_secret_is_refused_without_a_word_of_it(nvml_lib, node, tmp_path):
    secret = tmp_path / "secret.yaml"
    secret.write_text("version: 'hunter2-the-secret'\nsystem: {driver_version: hunter2}\n")
    os.chmod(secret, 0o600)
    config = _path(node, "config.yaml")
    _swap(config, lambda p: os.symlink(secret, p))
    run = answered([sys.executable, PROBE, "survey"], clean_env(nvml_lib, node_env(node)))
    assert json.loads(run.stdout.splitlines()[-1]) == {"init": DRIVER_NOT_LOADED}
    assert run.stderr == (f"mock NVML: cannot read {config} (a symbolic link, not followed): "
                          "set MOCK_NVML_CONFIG to a readable profile\n")
    assert "hunter2" not in run.stdout + run.stderr


def test_a_companion_linked_to_a_good_copy_elsewhere_is_refused(nvml_lib, node, tmp_path):
    companion = _path(node, "config.nvml")
    os.replace(companion, tmp_path / "copy.nvml")
    os.symlink(tmp_path / "copy.nvml", companion)
    seen, stderr = survey(nvml_lib, node)
    assert seen == {"init": DRIVER_NOT_LOADED} and "(" + companion + ": a symbolic link, not followed)" in stderr


def test_a_file_in_place_of_the_overrides_directory_is_ignored_and_named_as_no_directory(nvml_lib, node):
    shutil.rmtree(_path(node, "overrides"))
    with open(_path(node, "overrides"), "w") as f:
        f.write("name: From A File\n")
    seen, stderr = survey(nvml_lib, node)
    assert seen["gpus"][1]["Name"] == PROFILE_NAME
    assert stderr == (f"mock NVML: ignoring overrides {node}/overrides: not a directory "
                      "(it holds all.yaml and gpu<N>.yaml)\n")


def test_an_overrides_directory_linked_elsewhere_is_ignored_and_never_reset_through(nvml_lib, node, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    os.replace(_path(node, "overrides"), elsewhere)
    os.symlink(elsewhere, _path(node, "overrides"))
    seen, stderr = survey(nvml_lib, node)
    assert seen["gpus"][1]["Name"] == PROFILE_NAME
    assert stderr == (f"mock NVML: ignoring overrides {node}/overrides: a symbolic link, not followed "
                      "(it holds all.yaml and gpu<N>.yaml)\n")
    seen, stderr = run_probe(nvml_lib, node_env(node), "reset", "1")     # what nvidia-smi -r calls
    assert sorted(os.listdir(elsewhere)) == ["all.nvml", "all.yaml", "gpu1.nvml", "gpu1.yaml"]


def test_a_reset_removes_a_linked_or_setuid_document_without_touching_what_it_names(nvml_lib, node, tmp_path):
    target = tmp_path / "setuid-tool"
    target.write_bytes(b"name: Secret\n")
    os.chmod(target, 0o4755)
    overrides = _path(node, "overrides")
    yaml = os.path.join(overrides, "gpu1.yaml")
    _swap(yaml, lambda p: os.symlink(target, p))
    os.chmod(os.path.join(overrides, "gpu1.nvml"), 0o6777)
    seen, stderr = run_probe(nvml_lib, node_env(node), "reset", "1")     # what nvidia-smi -r calls
    assert seen["reset"] == 0
    assert stderr == f"mock NVML: ignoring overrides {yaml}: a symbolic link, not followed\n"
    assert sorted(os.listdir(overrides)) == ["all.nvml", "all.yaml"]
    assert (os.stat(target).st_mode & 0o7777, target.read_bytes()) == (0o4755, b"name: Secret\n")
    assert survey(nvml_lib, node)[0]["gpus"][1]["Name"] == PROFILE_NAME


def test_a_directory_in_place_of_a_document_fails_its_reset_in_one_line(nvml_lib, node):
    yaml = os.path.join(_path(node, "overrides"), "gpu1.yaml")
    _swap(yaml, os.mkdir)
    seen, stderr = run_probe(nvml_lib, node_env(node), "reset", "1")
    assert seen["reset"] == NO_PERMISSION
    assert stderr == (f"mock NVML: ignoring overrides {yaml}: a directory, not a regular file\n"
                      f"mock NVML: cannot reset: removing {yaml}: Is a directory "
                      "(try 'mokka ctl reset' as the file's owner)\n")
    seen, stderr = survey(nvml_lib, node)
    assert seen["gpus"][1]["Name"] == PROFILE_NAME and stderr.count("\n") == 1 and yaml in stderr


# --- numbers the moving readings compute with ------------------------------------------

EXTREMES = [b"gpu.0.dynamic_metrics.temperature.base_c 9223372036854775807",
            b"gpu.0.dynamic_metrics.temperature.variance_c 9223372036854775807",
            b"gpu.0.dynamic_metrics.temperature.ramp_c 9223372036854775807",
            b"gpu.0.dynamic_metrics.temperature.ramp_period_sec 9223372036854775807",
            b"gpu.0.dynamic_metrics.power.base_mw -9223372036854775808",
            b"gpu.0.dynamic_metrics.power.variance_mw -9223372036854775808",
            b"gpu.0.dynamic_metrics.memory.pattern burst",
            b"gpu.0.dynamic_metrics.memory.burst_period_sec 9223372036854775807",
            b"gpu.0.memory.total_bytes 9223372036854775807",
            b"gpu.0.dynamic_metrics.utilization.pattern burst",
            b"gpu.0.dynamic_metrics.utilization.burst_period_sec 9223372036854775807"]


def test_moving_readings_of_any_64_bit_parameters_stay_exact(nvml_lib, node):
    """Parameters no schema would let through, in a state a workload wrote: each past
    2^40 counts as absent, so every reading is the profile's static one, and nothing
    overflows (UBSan halts on the first signed overflow: test_sanitized.py)."""
    set_lines(_path(node, "config.nvml"), EXTREMES)
    for name in ("all.yaml", "all.nvml"):                   # its utilization would hide the moving one
        os.unlink(_path(node, f"overrides/{name}"))
    seen, stderr = survey(nvml_lib, node)
    gpu = seen["gpus"][0]
    assert stderr == "" and gpu["Temperature"] == 34           # thermal.temperature_gpu_c
    assert gpu["PowerUsage"] == 200000                      # current_draw_mw, held to min_limit_mw
    assert gpu["MemoryInfo"][0] == 9223372036854775807
    assert gpu["UtilizationRates"][0] in (10, 45)          # burst: the block's lo or hi


@pytest.mark.parametrize("base, reads", [(-1099511627776, 0), (-1099511627777, 34),
                                         (1099511627776, 92), (1099511627777, 34)],
                         ids=["-2^40: taken, held to 0 C", "one below: absent, the static 34 C",
                              "2^40: taken, held to the shutdown 92 C", "one above: absent"])
def test_a_parameter_is_taken_up_to_2_to_the_40_either_way_and_absent_past_it(nvml_lib, node, base, reads):
    set_lines(_path(node, "config.nvml"), [b"gpu.0.dynamic_metrics.temperature.base_c %d" % base,
                                           b"gpu.0.dynamic_metrics.temperature.variance_c 0"])
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][0]["Temperature"] == reads


def test_utilization_past_100_percent_reads_100(nvml_lib, node):
    set_lines(_path(node, "config.nvml"), [b"gpu.0.dynamic_metrics.utilization.pattern busy",
                                           b"gpu.0.dynamic_metrics.utilization.gpu_max 150",
                                           b"gpu.0.dynamic_metrics.utilization.memory_max 150"])
    for name in ("all.yaml", "all.nvml"):                   # its utilization would hide the moving one
        os.unlink(_path(node, f"overrides/{name}"))
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][0]["UtilizationRates"] == [100, 100]


@pytest.mark.parametrize("lines", [[b"gpu.0.dynamic_metrics.memory.pattern idle",
                                    b"gpu.0.dynamic_metrics.memory.used_min_pct 150"],
                                   [b"gpu.0.dynamic_metrics.memory.pattern busy",
                                    b"gpu.0.dynamic_metrics.memory.used_max_pct 150"]],
                         ids=["a minimum past 100 %", "a maximum past 100 %"])
def test_memory_used_past_100_percent_is_all_that_is_usable_and_free_is_0(nvml_lib, node, lines):
    set_lines(_path(node, "config.nvml"), lines)
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][0]["MemoryInfo"] == [85899345920, 0, 85899345920]  # total, free, used


def test_memory_used_moves_between_its_bounds_as_if_a_maximum_past_100_percent_were_100(nvml_lib, node):
    def used(max_pct: bytes) -> int:
        set_lines(_path(node, "config.nvml"), [b"gpu.0.dynamic_metrics.memory.pattern steady",
                                               b"gpu.0.dynamic_metrics.memory.used_min_pct 0",
                                               b"gpu.0.dynamic_metrics.memory.used_max_pct " + max_pct])
        env = {**node_env(node), names.ENV_NVML_CLOCK: "1700000000"}
        run = answered([sys.executable, PROBE, "survey"], clean_env(nvml_lib, env))
        assert run.returncode == 0 and run.stderr == "", run.stderr
        return json.loads(run.stdout.splitlines()[-1])["gpus"][0]["MemoryInfo"][2]
    assert used(b"150") == used(b"100") == 78763786240           # 92 % of it: not all 85899345920


def test_a_state_that_states_no_gpu_count_lists_no_gpu(nvml_lib, node):
    drop_lines(_path(node, "config.nvml"), [b"gpu.len"])
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["init"] == 0 and seen["gpus"] == []


STDIN_CLOSED = r"""
import ctypes, os, sys, time
os.close(0)                                   # a daemon started without a stdin
lib = ctypes.CDLL("libnvidia-ml.so.1")
assert lib.nvmlInit_v2() == 0
h, buf = ctypes.c_void_p(), ctypes.create_string_buffer(96)
assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
seen = []
for look in range(2):                         # the second, past the library's 250 ms, looks again
    assert lib.nvmlDeviceGetName(h, buf, 96) == 0
    seen.append(buf.value.decode())
    time.sleep(0.3)
print(*seen, os.path.exists("/proc/self/fd/0"))
"""


def test_a_process_without_a_stdin_reads_its_overrides_and_leaves_descriptor_0_closed(nvml_lib, tmp_path):
    # The first descriptor the library opens is then 0: it is a descriptor like any other.
    env = corpus.stage(corpus.Case("stdin", "a100", (), overrides={0: "name: Overridden\n"}), str(tmp_path))
    res = subprocess.run([sys.executable, "-c", STDIN_CLOSED], env=clean_env(nvml_lib, env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert (res.stdout, res.stderr) == ("Overridden Overridden False\n", "")


def test_moving_power_of_a_gpu_whose_state_gives_no_draw_and_no_limits_starts_from_0(nvml_lib, node):
    path = _path(node, "config.nvml")
    drop_lines(path, [b"gpu.0.power.current_draw_mw", b"gpu.0.power.min_limit_mw", b"gpu.0.power.max_limit_mw"])
    set_lines(path, [b"gpu.0.dynamic_metrics.power.variance_mw 0"])
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][0]["PowerUsage"] == 0


def test_memory_used_of_a_state_without_a_reserve_can_reach_every_byte(nvml_lib, node):
    path = _path(node, "config.nvml")
    drop_lines(path, [b"gpu.0.memory.reserved_bytes"])
    set_lines(path, [b"gpu.0.dynamic_metrics.memory.pattern busy", b"gpu.0.dynamic_metrics.memory.used_max_pct 100"])
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][0]["MemoryInfo"] == [85899345920, 0, 85899345920]  # total, free, used


@pytest.mark.parametrize("text", [b"-1", b" 5", b"+5"], ids=["negative", "a blank first", "a sign first"])
def test_a_count_of_bytes_that_is_no_plain_number_reads_as_absent(nvml_lib, node, text):
    # strtoull would take each: "-1" as 2^64 - 1, " 5" and "+5" as 5.
    set_lines(_path(node, "config.nvml"), [b"gpu.0.memory.total_bytes " + text])
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][0]["MemoryInfo"] == ["err", 3]     # NOT_SUPPORTED


def test_an_overrides_document_of_exactly_the_document_bound_is_read(nvml_lib, node):
    head = b"name: At The Bound\n#"
    text = head + b"x" * (4194304 - len(head) - 1) + b"\n"         # 4 MiB: the bound, not past it
    corpus.write_overrides(node, {1: text.decode()})
    assert os.path.getsize(_path(node, "overrides/gpu1.yaml")) == 4194304
    seen, stderr = survey(nvml_lib, node)
    assert stderr == "" and seen["gpus"][1]["Name"] == "At The Bound"


DOCUMENTS = ["config.yaml", "config.nvml", "mig.nvml", "settings.nvml", "overrides/all.yaml", "overrides/gpu1.nvml",
             "xid-events.yaml", "xid-events.nvml"]


def test_device_nodes_for_every_document_are_never_opened(nvml_lib, node):
    """A container's default capabilities allow mknod in driver/config: a process of the host
    (root's nvidia-smi, DCGM) must not open a host device through a node put at a document's
    name. inotify reports every open of each node; none may come, and the survey still runs."""
    from inotify_simple import INotify, flags

    profile = {name: open(_path(node, name), "rb").read() for name in ("config.yaml", "config.nvml")}
    with INotify(nonblocking=True) as watch:
        for name in DOCUMENTS:
            path = _path(node, name)
            if os.path.lexists(path):
                os.unlink(path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.mknod(path, 0o20644, os.makedev(1, 3))                  # /dev/null's numbers
            watch.add_watch(path, flags.OPEN)
        run = answered([sys.executable, PROBE, "survey"], clean_env(nvml_lib, node_env(node)))
        assert json.loads(run.stdout.splitlines()[-1]) == {"init": DRIVER_NOT_LOADED}
        assert run.stderr == (f"mock NVML: cannot read {_path(node, 'config.yaml')} (a device, not a regular "
                              "file): set MOCK_NVML_CONFIG to a readable profile\n")
        for name, data in profile.items():                                # the profile back: the rest is read
            os.unlink(_path(node, name))
            with open(_path(node, name), "wb") as f:
                f.write(data)
        seen, _ = survey(nvml_lib, node)
        assert seen["init"] == 0 and len(seen["gpus"]) == 2
        assert [(e.wd, e.mask) for e in watch.read(timeout=0) if e.mask & flags.OPEN] == []
