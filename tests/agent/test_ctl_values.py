"""``mokka ctl`` takes only what it documents: each reading within its key's range and
within its GPU's board as the node's compiled profile has it (memory used within the
memory less the driver's reserve, temperature up to the shutdown temperature, power up
to the maximum limit, clocks up to the maximum clocks); numbers, GPU indices and Xid
codes in ASCII digits; each key once. An overrides document holding a value of a type
its key does not take (a date, binary data, a set, a timestamp) is shown by ``ctl
status`` as an error naming the file and key, and refused by ``ctl set``, untouched.
Every refusal is one line and exit 1, and writes nothing. Run as a user would: the real
command as a process, against a node the real agent staged from a T4 profile whose
last GPU has a smaller board of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from helpers import run_agent

from mokka.core import names
from mokka.core import profile as prof
from mokka.core.overlay import host_overlay
from tests.native.staged import StagedNode, nvml_build, ok  # noqa: F401 (fixture)

#: GPU 3's own board: 8 GiB with 256 MiB reserved (7936 MiB usable), shut down at 90 C,
#: at most 50 W, 1000 MHz SM and graphics, 4000 MHz memory. GPUs 0-2 are T4s as built in
#: (16384 MiB with 300 MiB reserved: 16084 usable; 96 C; 70 W; 1590 / 1590 / 5001 MHz).
SMALL_BOARD = {"memory": {"total_bytes": 8 << 30, "reserved_bytes": 256 << 20},
               "thermal": {"shutdown_threshold_c": 90},
               "power": {"max_limit_mw": 50_000},
               "clocks": {"sm_max": 1000, "graphics_max": 1000, "memory_max": 4000}}
MIB = 1 << 20
DIGITS_5000 = "9" * 5000
#: How a 5000-digit word reads in a line: quoted, cut at 64 characters.
SHOWN_5000 = "'" + "9" * 60 + "..."
NO_SUCH_GPU = ": no such GPU here (give an index from 0 to 3 or a UUID)"
NOT_XID = (": not an Xid code; expected an integer from 1 to 999 (e.g. 79: fallen off the bus, "
           "48: double bit ECC error)")
T4_TEMP = "expected an integer from 0 to 96 (optionally with 'C'); 96 C is this GPU's shutdown temperature"


@pytest.fixture(scope="module")
def node(tmp_path_factory, nvml_build):
    root = str(tmp_path_factory.mktemp("ctl-values"))
    doc = yaml.safe_load(prof.read("t4")[1])
    doc["devices"][3].update(SMALL_BOARD)
    profile = os.path.join(str(tmp_path_factory.mktemp("ctl-values-profile")), "t4-small-gpu3.yaml")
    with open(profile, "w") as f:
        yaml.safe_dump(doc, f)
    staged = run_agent(root, "--once", "--health-addr", "", "--profile", profile)
    assert staged.returncode == 0, staged.stderr
    dev_root = os.path.join(root, "empty-dev-root")
    os.makedirs(dev_root)
    yield StagedNode(root, host_overlay(root), dev_root)
    done = run_agent(root, "--teardown")
    assert done.returncode == 0, done.stderr


@pytest.fixture(autouse=True)
def clean(node):
    """Each case on a node with no overrides and no Xid events (so one never fails the next)."""
    yield
    ok(ctl(node, "reset"))
    for name in (names.XID_EVENTS_FILE, "xid-events.nvml"):
        path = os.path.join(node.overlay.driver_config, name)
        if os.path.lexists(path):
            os.unlink(path)


def ctl(node: StagedNode, *args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], capture_output=True, text=True,
                          env=node.env(MOCK_NVML_CONFIG=node.config, **env), timeout=60)


def ctl_lines(done: subprocess.CompletedProcess) -> list[str]:
    """ctl's own stderr lines (the mock library's notices of a document it ignores are its own)."""
    return [line for line in done.stderr.splitlines() if not line.startswith("mock NVML: ")]


def documents(node: StagedNode) -> list[str]:
    d = node.overlay.overrides
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def document(node: StagedNode, name: str) -> dict:
    with open(os.path.join(node.overlay.overrides, name)) as f:
        return yaml.safe_load(f)


# --- values: one row per case, the exact line and exit code -----------------------------

REFUSED = [
    # readings past the board (GPUs 0-2: T4; GPU 3: SMALL_BOARD)
    ("memory used of 16 TiB past the board's memory",
     ["set", "1", "memory.used=16777216"],
     "ctl: memory.used=16777216: expected an integer from 0 to 16084 (optionally with 'MiB'); "
     "16084 MiB is this GPU's memory less what the driver reserves"),
    ("memory used one MiB past the memory less the reserve",
     ["set", "0", "memory.used=16085MiB"],
     "ctl: memory.used=16085MiB: expected an integer from 0 to 16084 (optionally with 'MiB'); "
     "16084 MiB is this GPU's memory less what the driver reserves"),
    ("memory used is held to the named GPU's own board",
     ["set", "3", "memory.used=7937"],
     "ctl: memory.used=7937: expected an integer from 0 to 7936 (optionally with 'MiB'); "
     "7936 MiB is this GPU's memory less what the driver reserves"),
    ("temperature past the shutdown temperature", ["set", "0", "temperature=97"], f"ctl: temperature=97: {T4_TEMP}"),
    ("temperature past the small board's shutdown temperature", ["set", "3", "temperature=91C"],
     "ctl: temperature=91C: expected an integer from 0 to 90 (optionally with 'C'); "
     "90 C is this GPU's shutdown temperature"),
    ("power past the maximum power limit", ["set", "2", "power=71W"],
     "ctl: power=71W: expected an integer from 0 to 70 (optionally with 'W'); "
     "70 W is this GPU's maximum power limit"),
    ("power past the small board's maximum limit", ["set", "3", "power=51"],
     "ctl: power=51: expected an integer from 0 to 50 (optionally with 'W'); "
     "50 W is this GPU's maximum power limit"),
    ("SM clock past the maximum SM clock", ["set", "0", "clocks.sm=1591"],
     "ctl: clocks.sm=1591: expected an integer from 0 to 1590 (optionally with 'MHz'); "
     "1590 MHz is this GPU's maximum SM clock"),
    ("graphics clock past the maximum graphics clock", ["set", "3", "clocks.graphics=1001MHz"],
     "ctl: clocks.graphics=1001MHz: expected an integer from 0 to 1000 (optionally with 'MHz'); "
     "1000 MHz is this GPU's maximum graphics clock"),
    ("memory clock past the maximum memory clock", ["set", "1", "clocks.memory=5002"],
     "ctl: clocks.memory=5002: expected an integer from 0 to 5001 (optionally with 'MHz'); "
     "5001 MHz is this GPU's maximum memory clock"),
    ("utilization past 100 %", ["set", "0", "utilization.gpu=101"],
     "ctl: utilization.gpu=101: expected an integer from 0 to 100 (optionally with '%')"),
    ("a board without a maximum memory temperature holds it to the key's range",
     ["set", "0", "memory_temperature=201"],
     "ctl: memory_temperature=201: expected an integer from 0 to 200 (optionally with 'C')"),
    # numbers that are not plain ASCII digits in range
    ("a negative reading", ["set", "0", "temperature=-1"], f"ctl: temperature=-1: {T4_TEMP}"),
    ("nan is no reading", ["set", "0", "temperature=nan"], f"ctl: temperature=nan: {T4_TEMP}"),
    ("inf is no reading", ["set", "0", "power=inf"],
     "ctl: power=inf: expected an integer from 0 to 70 (optionally with 'W'); 70 W is this GPU's maximum power limit"),
    ("2**64 is past every range", ["set", "0", "ecc.volatile.sbe=18446744073709551616"],
     "ctl: ecc.volatile.sbe=18446744073709551616: expected an integer from 0 to 2147483648"),
    ("a 5000-digit reading is one short line", ["set", "0", f"temperature={DIGITS_5000}"],
     f"ctl: temperature={SHOWN_5000}: {T4_TEMP}"),
    ("Arabic-Indic digits are no reading", ["set", "0", "temperature=٥٠"], f"ctl: temperature=٥٠: {T4_TEMP}"),
    ("an underscore in a number is no reading", ["set", "0", "temperature=5_0"], f"ctl: temperature=5_0: {T4_TEMP}"),
    ("a plus sign is no reading", ["set", "0", "temperature=+50"], f"ctl: temperature=+50: {T4_TEMP}"),
    ("a newline in a value stays on one line", ["set", "0", "temperature=5\n0"],
     f"ctl: temperature='5\\n0': {T4_TEMP}"),
    # words that are not KEY=VALUE once each
    ("an empty key", ["set", "0", "=5"], "ctl: =5: expected KEY=VALUE"),
    ("an equals sign alone", ["set", "0", "="], "ctl: =: expected KEY=VALUE"),
    ("a key given twice", ["set", "0", "temperature=50", "utilization.gpu=5", "temperature=60"],
     "ctl: temperature: given more than once; give each key once"),
    ("10,000 pairs stop at the first repeat", ["set", "0", *["temperature=50"] * 10_000],
     "ctl: temperature: given more than once; give each key once"),
    ("a key ctl does not set, with a value YAML reads as a date", ["set", "0", "name=2024-01-01"],
     "ctl: name: not a key ctl sets; keys: temperature (0..200C), memory_temperature (0..200C), ..."),
    # GPUs
    ("a GPU index past the last", ["set", "4", "temperature=50"], "ctl: 4" + NO_SUCH_GPU),
    ("a negative GPU index", ["set", "-1", "temperature=50"], "ctl: -1" + NO_SUCH_GPU),
    ("a GPU index of 2**64", ["reset", "18446744073709551616"], "ctl: 18446744073709551616" + NO_SUCH_GPU),
    ("a 5000-digit GPU index is one short line", ["set", DIGITS_5000, "temperature=50"],
     f"ctl: {SHOWN_5000}" + NO_SUCH_GPU),
    ("an Arabic-Indic GPU index", ["set", "١", "temperature=50"], "ctl: ١" + NO_SUCH_GPU),
    ("an Arabic-Indic GPU index to reset", ["reset", "١"], "ctl: ١" + NO_SUCH_GPU),
    ("an Arabic-Indic GPU index for an Xid", ["xid", "١", "79"], "ctl: ١" + NO_SUCH_GPU),
    ("a UUID that is not the node's", ["set", "GPU-00000000-0000-0000-0000-000000000000", "temperature=50"],
     "ctl: GPU-00000000-0000-0000-0000-000000000000" + NO_SUCH_GPU),
    # Xid codes
    ("Xid code in Arabic-Indic digits", ["xid", "0", "٧٩"], "ctl: ٧٩" + NOT_XID),
    ("Xid code 0", ["xid", "0", "0"], "ctl: 0" + NOT_XID),
    ("Xid code past 999", ["xid", "0", "1000"], "ctl: 1000" + NOT_XID),
    ("Xid code of 2**64", ["xid", "0", "18446744073709551616"], "ctl: 18446744073709551616" + NOT_XID),
    ("a 5000-digit Xid code is one short line", ["xid", "0", DIGITS_5000], f"ctl: {SHOWN_5000}" + NOT_XID),
    ("a negative Xid code", ["xid", "0", "-79"], "ctl: -79" + NOT_XID),
    ("an Xid code with an underscore", ["xid", "0", "7_9"], "ctl: 7_9" + NOT_XID),
]


@pytest.mark.parametrize("args, line", [row[1:] for row in REFUSED], ids=[row[0] for row in REFUSED])
def test_a_refused_word_is_one_line_exit_1_and_writes_nothing(node, args, line):
    done = ctl(node, *args)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr[-2000:]
    lines = ctl_lines(done)
    if line.endswith("..."):
        assert len(lines) == 1 and lines[0].startswith(line[:-3]), lines
    else:
        assert lines == [line]
    assert documents(node) == []
    assert not os.path.exists(os.path.join(node.overlay.driver_config, names.XID_EVENTS_FILE))


ACCEPTED = [
    ("memory used up to the memory less the reserve", "0", ["memory.used=16084"],
     {"memory": {"used_bytes": 16084 * MIB}}),
    ("the small board's memory less its reserve", "3", ["memory.used=7936MiB"],
     {"memory": {"used_bytes": 7936 * MIB}}),
    ("temperature up to the shutdown temperature", "0", ["temperature=96"], {"thermal": {"temperature_gpu_c": 96}}),
    ("power, SM and memory clocks at the board's maxima", "1", ["power=70W", "clocks.sm=1590", "clocks.memory=5001"],
     {"power": {"current_draw_mw": 70_000}, "clocks": {"sm_current": 1590, "memory_current": 5001}}),
    ("the small board's maxima", "3", ["temperature=90", "power=50", "clocks.graphics=1000"],
     {"thermal": {"temperature_gpu_c": 90}, "power": {"current_draw_mw": 50_000},
      "clocks": {"graphics_current": 1000}}),
    ("a board without a maximum memory temperature takes the key's range", "2", ["memory_temperature=200"],
     {"thermal": {"temperature_memory_c": 200}}),
    ("ASCII digits with blanks around them", "2", ["temperature= 50 "], {"thermal": {"temperature_gpu_c": 50}}),
]


@pytest.mark.parametrize("gpu, words, doc", [row[1:] for row in ACCEPTED], ids=[row[0] for row in ACCEPTED])
def test_positive_control_values_within_the_board_are_written(node, gpu, words, doc):
    done = ctl(node, "set", gpu, *words)
    assert (done.returncode, done.stderr) == (0, "")
    assert document(node, f"gpu{gpu}.yaml") == doc


def test_a_containers_own_index_is_held_to_its_physical_gpus_board(node):
    # A container that sees physical GPUs 2 and 3 calls the small board "1".
    done = ctl(node, "set", "1", "memory.used=7937", MOCK_NVML_VISIBLE_DEVICES="2,3")
    assert done.returncode == 1
    assert ctl_lines(done) == ["ctl: memory.used=7937: expected an integer from 0 to 7936 (optionally with "
                               "'MiB'); 7936 MiB is this GPU's memory less what the driver reserves"]
    ok(ctl(node, "set", "0", "memory.used=16084", MOCK_NVML_VISIBLE_DEVICES="2,3"))
    assert documents(node) == ["gpu2.nvml", "gpu2.yaml"]
    assert document(node, "gpu2.yaml") == {"memory": {"used_bytes": 16084 * MIB}}


def test_memory_used_at_the_bound_never_reads_above_total(node):
    """What the bound is for: NVML's used stays within total, free at 0, not below."""
    ok(ctl(node, "set", "3", "memory.used=7936"))
    done = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", "-i", "3",
                           "--query-gpu=memory.total,memory.reserved,memory.used,memory.free",
                           "--format=csv,noheader"], capture_output=True, text=True,
                          env=node.env(MOCK_NVML_CONFIG=node.config), timeout=60)
    assert (done.returncode, done.stdout) == (0, "8192 MiB, 256 MiB, 7936 MiB, 0 MiB\n"), done.stderr


# --- overrides documents of types no key takes ------------------------------------------

SPOILED = [
    ("a date where an integer goes", "thermal: {temperature_gpu_c: 2024-01-01}\n",
     "thermal.temperature_gpu_c is a date, not an integer"),
    ("binary data where a string goes", "name: !!binary aGVsbG8=\n", "name is binary data (!!binary), not a string"),
    ("a set under a key the GPU does not declare", "tags: !!set {a, b}\n",
     "tags is a set (!!set), not a string, number, boolean, list or mapping"),
    ("a timestamp deep in a list", "processes: [{pid: 7, name: 2024-01-01T10:00:00Z}]\n",
     "processes[0].name is a timestamp, not a string"),
    ("a date as a key", "thermal: {2024-01-01: 5}\n", "thermal has a key that is a date, not a string"),
    ("a number where a mapping goes", "power: 300\n", "power is an integer, not a mapping"),
    ("nan where an integer goes", "utilization: {gpu: .nan}\n", "utilization.gpu is a number, not an integer"),
    ("inf under an undeclared key", "extra: {level: .inf}\n",
     "extra.level is not a finite number (it is .nan or .inf)"),
]


def write_document(node: StagedNode, name: str, text: str) -> str:
    os.makedirs(node.overlay.overrides, exist_ok=True)
    path = os.path.join(node.overlay.overrides, name)
    with open(path, "w") as f:
        f.write(text)
    return path


@pytest.mark.parametrize("text, problem", [row[1:] for row in SPOILED], ids=[row[0] for row in SPOILED])
def test_status_names_the_file_and_key_of_a_value_of_the_wrong_type(node, text, problem):
    gpu_path = write_document(node, "gpu1.yaml", text)
    all_path = write_document(node, "all.yaml", text)
    done = ctl(node, "status")
    assert (done.returncode, ctl_lines(done)) == (0, [])
    status = json.loads(done.stdout)
    assert status["all"] == {"error": f"ignoring overrides {all_path}: {problem}"}
    assert [g["overrides"] for g in status["gpus"]] == [
        {}, {"error": f"ignoring overrides {gpu_path}: {problem}"}, {}, {}]


@pytest.mark.parametrize("text, problem", [row[1:] for row in SPOILED], ids=[row[0] for row in SPOILED])
def test_set_refuses_to_merge_into_a_value_of_the_wrong_type_and_leaves_it(node, text, problem):
    path = write_document(node, "gpu0.yaml", text)
    done = ctl(node, "set", "0", "utilization.gpu=50")
    assert (done.returncode, done.stdout) == (1, "")
    assert ctl_lines(done) == [f"ctl: {path}: {problem}; correct it or drop the GPU's overrides "
                               "(ctl reset GPU), then run this again"]
    with open(path) as f:
        assert f.read() == text
    assert documents(node) == ["gpu0.yaml"]


def test_positive_control_a_hand_written_document_of_the_right_types_is_merged(node):
    write_document(node, "gpu0.yaml", "power: {current_draw_mw: 1000, average_draw_mw: N/A}\n"
                                      "fan: {speed_percent: N/A}\nextra: [1, 2.5, x, true]\n")
    ok(ctl(node, "set", "0", "utilization.gpu=50"))
    assert document(node, "gpu0.yaml") == {"power": {"current_draw_mw": 1000, "average_draw_mw": "N/A"},
                                           "fan": {"speed_percent": "N/A"}, "extra": [1, 2.5, "x", True],
                                           "utilization": {"gpu": 50}}
    status = json.loads(ok(ctl(node, "status")))
    assert status["gpus"][0]["overrides"]["utilization"] == {"gpu": 50}


def test_each_change_prints_one_line_saying_what_changed(node):
    uuids = [g["uuid"] for g in json.loads(ok(ctl(node, "status")))["gpus"]]
    said = ctl(node, "set", "1", "temperature=80", "power=60W")
    assert (said.returncode, said.stdout, said.stderr) == (
        0, f"GPU 1 ({uuids[1]}): set temperature=80 power=60W\n", "")
    ok(ctl(node, "set", uuids[2], "temperature=70"))
    assert ok(ctl(node, "reset", "1")) == f"GPU 1 ({uuids[1]}): overrides dropped\n"
    assert ok(ctl(node, "reset", "1")) == f"GPU 1 ({uuids[1]}): no overrides to drop\n"
    assert ok(ctl(node, "reset")) == "every GPU: 1 override document dropped\n"
    assert ok(ctl(node, "reset")) == "every GPU: 0 override documents dropped\n"
