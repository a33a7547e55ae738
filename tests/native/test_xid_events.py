"""Injected Xids reach nvmlEventSetWait_v2 callers: the events file beside config.yaml
(mokka/core/xid.py render), read by native/nvml/api/xid.c while a wait blocks."""

from __future__ import annotations

import json
import os

from mokka.core import names, xid
from mokka.engine import flatstate
from mokka.core.fsutil import atomic_write
from tests.corpus import engine_cases as corpus
from tests.native.conftest import start_probe

XID_CRITICAL = 8                               # nvmlEventTypeXidCriticalError


def write_events(config_dir: str, events: list, last: int, companion: bool = True) -> None:
    path = os.path.join(config_dir, names.XID_EVENTS_FILE)
    text, nvml = xid.render(events, last)
    if companion:
        atomic_write(flatstate.companion_path(path), nvml)
    atomic_write(path, text)


def event(seq: int, gpu: int, code: int) -> xid.Event:
    return xid.Event(seq, xid.Injection(gpu, f"GPU-{gpu}", f"00000000:{gpu + 16:02X}:00.0", code))


def read_line(proc) -> object:
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    return json.loads(line)


def test_each_injected_xid_reaches_a_blocked_waiter_once(nvml_lib, tmp_path):
    env = corpus.stage(corpus.Case("xid", "h100", ()), str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    write_events(config_dir, [event(1, 0, 13)], 1)            # injected before the set: not delivered
    proc = start_probe(nvml_lib, env, "xid", "2")
    try:
        assert read_line(proc) == ["ready"]
        write_events(config_dir, [event(1, 0, 13), event(2, 3, 79)], 2)
        assert read_line(proc) == {"index": 3, "type": XID_CRITICAL, "xid": 79, "gi": 0xFFFFFFFF}
        write_events(config_dir, [event(3, 5, 48)], 4, companion=False)   # YAML without its companion
        write_events(config_dir, [event(3, 5, 48), event(4, 1, 94)], 4)
        assert read_line(proc) == {"index": 5, "type": XID_CRITICAL, "xid": 48, "gi": 0xFFFFFFFF}
        assert proc.wait(60) == 0
        assert proc.stdout.read() == "" and proc.stderr.read() == ""
    finally:
        proc.kill()


SET_MADE_ON_A_LINE = """
import json, sys, pynvml as n
n.nvmlInit()
print(json.dumps(["init"]), flush=True)
sys.stdin.readline()
event_set = n.nvmlEventSetCreate()
for i in range(n.nvmlDeviceGetCount()):
    n.nvmlDeviceRegisterEvents(n.nvmlDeviceGetHandleByIndex(i), n.nvmlEventTypeXidCriticalError, event_set)
got = []
while True:
    try:
        data = n.nvmlEventSetWait_v2(event_set, 1500)
    except n.NVMLError_Timeout:
        break
    got.append(data.eventData)
print(json.dumps(got), flush=True)
"""


def test_an_event_set_made_while_the_events_file_is_rewritten_takes_no_old_event_for_new(nvml_lib, tmp_path):
    """The agent renames the companion, then the YAML: a set made between the two must still
    start after the Xid injected before it (13), not from nothing."""
    import subprocess
    import sys
    import time

    from tests.native.conftest import clean_env

    env = corpus.stage(corpus.Case("xid", "h100", ()), str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    write_events(config_dir, [event(1, 0, 13)], 1)
    proc = subprocess.Popen([sys.executable, "-c", SET_MADE_ON_A_LINE], env=clean_env(nvml_lib, env),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert read_line(proc) == ["init"]
        path = os.path.join(config_dir, names.XID_EVENTS_FILE)
        text, companion = xid.render([event(1, 0, 13), event(2, 1, 31)], 2)
        atomic_write(flatstate.companion_path(path), companion)         # the first of the two renames
        proc.stdin.write("go\n")
        proc.stdin.flush()
        time.sleep(0.3)
        atomic_write(path, text)                                         # the second
        delivered = read_line(proc)
        assert 13 not in delivered and set(delivered) <= {31}
        assert proc.wait(60) == 0
    finally:
        proc.kill()
