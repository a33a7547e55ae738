"""The file source, driven by poll_once with a fake clock and real inotify."""

from __future__ import annotations

import os

from helpers import configmap_dir, profile_bytes

from mokka.agent.source import FileSource, watch_dirs
from mokka.core import log as mlog
from tests.corpus.minimal_profile import GPU_FIELDS

LOG = mlog.get("test")


def drain(src: FileSource, now: float):
    """Poll until the burst is read (a bounded number of clock steps, no sleeping)."""
    out = None
    for step in range(40):
        out = src.poll_once(now + step * 0.05) or out
    return out


def test_first_poll_reads_and_unchanged_bytes_emit_nothing(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(profile_bytes("a100", 2))
    src = FileSource(str(path), None, "", LOG, resync_interval=10)
    first = src.poll_once(0.0)
    assert first is not None and first.gpu_count == 2 and first.generation == 1
    assert src.poll_once(0.01) is None
    assert src.poll_once(11.0) is None            # a resync of identical bytes is silent


def test_configmap_swap_is_seen_through_the_data_symlink(tmp_path):
    cm = tmp_path / "cm"
    configmap_dir(str(cm), {"p.yaml": profile_bytes("a100", 2)}, "v1")
    src = FileSource(str(cm / "p.yaml"), None, "", LOG, resync_interval=0)
    assert src.poll_once(0.0).gpu_count == 2
    assert str(cm) in watch_dirs(str(cm / "p.yaml"))
    configmap_dir(str(cm), {"p.yaml": profile_bytes("a100", 3)}, "v2")
    got = drain(src, 1.0)
    assert got is not None and got.gpu_count == 3 and got.generation == 2


def test_an_edit_behind_a_symlink_is_seen_at_the_far_end(tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    (real_dir / "p.yaml").write_bytes(profile_bytes("a100", 2))
    link = tmp_path / "etc" / "config.yaml"
    link.parent.mkdir()
    os.symlink(real_dir / "p.yaml", link)
    src = FileSource(str(link), None, "", LOG, resync_interval=0)
    src.poll_once(0.0)
    (real_dir / "p.yaml").write_bytes(profile_bytes("a100", 4))    # in place, behind the link
    assert drain(src, 1.0).gpu_count == 4


def test_a_burst_is_debounced_into_one_read(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(profile_bytes("a100", 2))
    src = FileSource(str(path), None, "", LOG, resync_interval=0, debounce=0.1)
    src.poll_once(0.0)
    for n in (3, 4, 5):
        path.write_bytes(profile_bytes("a100", n))
    assert src.poll_once(1.0) is None              # events seen, still inside the window
    got = src.poll_once(1.2)
    assert got.gpu_count == 5 and got.generation == 2


def test_a_broken_profile_is_rejected_and_the_last_good_state_kept(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(profile_bytes("a100", 2))
    src = FileSource(str(path), None, "", LOG, resync_interval=0)
    src.poll_once(0.0)
    path.write_bytes(b"system: [\n")
    assert drain(src, 1.0) is None
    assert src.rejected.file == str(path) and "invalid YAML" in src.rejected.reason
    path.write_bytes(profile_bytes("a100", 2))      # fixed back to the good bytes
    assert drain(src, 5.0) is None and src.rejected is None


def test_a_builtin_profile_is_not_watched(tmp_path):
    src = FileSource("t4", None, "", LOG, resync_interval=0)
    assert src.poll_once(0.0).profile_source == "t4"
    assert src.next_timeout(1.0) is None           # nothing to wait for: no events, no resync


class RecordingLog:
    def __init__(self):
        self.lines = []

    def _add(self, level, msg, **fields):
        self.lines.append((level, msg, fields))

    def info(self, msg, **fields):
        self._add("info", msg, **fields)

    def warning(self, msg, **fields):
        self._add("warning", msg, **fields)

    def error(self, msg, **fields):
        self._add("error", msg, **fields)


def test_unknown_keys_are_accepted_and_named_once(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(b'version: "1.0"\nsystem: {driver_version: 550.163.01, future: 1}\n'
                     b"device_defaults: {shiny: {a: 1}, " + GPU_FIELDS.encode() + b"}\n")
    log = RecordingLog()
    src = FileSource(str(path), None, "", log, resync_interval=10)
    assert src.poll_once(0.0).gpu_count == 8
    assert src.poll_once(11.0) is None
    warned = [f for level, _, f in log.lines if level == "warning"]
    assert warned == [{"file": str(path), "keys": ["system.future", "device_defaults.shiny"],
                       "count": 2, "generation": 1}]


def test_a_known_profile_warns_of_nothing(tmp_path):
    """Positive control: the built-in profiles use only keys the format declares."""
    path = tmp_path / "p.yaml"
    path.write_bytes(profile_bytes("gb300", 4))
    log = RecordingLog()
    FileSource(str(path), None, "", log, resync_interval=10).poll_once(0.0)
    assert [line for line in log.lines if line[0] == "warning"] == []
