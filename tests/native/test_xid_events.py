"""Injected Xids reach nvmlEventSetWait_v2 callers: the events file beside config.yaml
(mokka/core/xid.py render), read by native/nvml/xid.c while a wait blocks."""

from __future__ import annotations

import json
import os

from mokka.core import flatstate, names, xid
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
