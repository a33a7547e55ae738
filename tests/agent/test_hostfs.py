"""The converger: write-ahead manifest, exact convergence, the mknod fallback."""

from __future__ import annotations

import os
import stat

from mokka.agent.hostfs import CharDev, File, HostFS, Link
from mokka.agent.manifest import Manifest
from mokka.core import log as mlog


def fs_at(tmp_path) -> HostFS:
    return HostFS(Manifest(str(tmp_path / "ov" / "m.json")), mlog.get("test"))


def test_converge_removes_what_is_no_longer_wanted_and_the_dirs_it_made(tmp_path):
    fs = fs_at(tmp_path)
    tree = {str(tmp_path / "ov" / "a" / f"f{i}"): File(b"x") for i in range(4)}
    tree[str(tmp_path / "ov" / "b" / "l")] = Link("../a/f0")
    fs.converge("o", tree)
    fs.converge("o", {str(tmp_path / "ov" / "a" / "f0"): File(b"y")})
    assert sorted(os.listdir(tmp_path / "ov" / "a")) == ["f0"]
    assert not (tmp_path / "ov" / "b").exists()
    assert (tmp_path / "ov" / "a" / "f0").read_bytes() == b"y"


def test_the_manifest_survives_a_restart_and_discard_uses_it(tmp_path):
    fs = fs_at(tmp_path)
    fs.converge("o", {str(tmp_path / "ov" / "x" / "f"): File(b"1")})
    again = fs_at(tmp_path)                        # a new process
    again.remove_owner("o")
    assert not (tmp_path / "ov" / "x").exists()


def test_teardown_never_removes_an_empty_directory_the_host_had(tmp_path):
    (tmp_path / "ov" / "etc" / "empty").mkdir(parents=True)     # the host's, and empty
    fs = fs_at(tmp_path)
    fs.converge("o", {str(tmp_path / "ov" / "etc" / "empty" / "f"): File(b"1"),
                      str(tmp_path / "ov" / "made" / "deep" / "g"): File(b"2")})
    fs.converge("o", {str(tmp_path / "ov" / "made" / "deep" / "g"): File(b"2")})
    assert (tmp_path / "ov" / "etc" / "empty").is_dir()       # emptied by convergence: kept
    fs.remove_owner("o")
    assert (tmp_path / "ov" / "etc" / "empty").is_dir()       # emptied by teardown: kept
    assert os.listdir(tmp_path / "ov" / "etc" / "empty") == []
    assert not (tmp_path / "ov" / "made").exists()             # the agent's own: gone


def test_without_mknod_device_paths_are_empty_files_logged_once(tmp_path, monkeypatch, caplog):
    def denied(*a, **k):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "mknod", denied)
    fs = fs_at(tmp_path)
    tree = {str(tmp_path / "ov" / "dev" / f"nvidia{i}"): CharDev(195, i) for i in range(3)}
    fs.converge("o", tree)
    for path in tree:
        st = os.lstat(path)
        assert stat.S_ISREG(st.st_mode) and st.st_size == 0 and stat.S_IMODE(st.st_mode) == 0o666
    assert fs.converge("o", tree) == 0             # converged: nothing rewritten
    assert sum("mknod not permitted" in r.getMessage() for r in caplog.records) == 1


def test_killed_writers_temp_files_are_cleaned(tmp_path):
    fs = fs_at(tmp_path)
    fs.converge("o", {str(tmp_path / "ov" / "d" / "f"): File(b"1")})
    (tmp_path / "ov" / "d" / ".f.abc.tmp").write_bytes(b"half")
    assert fs.clean_temps() == 1
    assert os.listdir(tmp_path / "ov" / "d") == ["f"]


def test_sweep_empties_only_directories_the_agent_made_and_follows_no_link(tmp_path):
    (tmp_path / "ov" / "hosts").mkdir(parents=True)              # the host's own directory
    (tmp_path / "ov" / "hosts" / "theirs").write_text("kept")
    outside = tmp_path / "outside"
    (outside / "d").mkdir(parents=True)
    (outside / "f").write_text("kept")
    fs = fs_at(tmp_path)
    made = tmp_path / "ov" / "made"
    fs.converge("o", {str(made / "config.yaml"): File(b"1"),
                      str(tmp_path / "ov" / "hosts" / "ours"): File(b"2")})
    (made / "dir" / "deep").mkdir(parents=True)
    (made / "dir" / "deep" / "x").write_text("workload")
    (made / "link-dir").symlink_to(outside / "d")
    (made / "link-file").symlink_to(outside / "f")
    os.mkfifo(made / "fifo")
    fs.remove_owner("o")
    assert sorted(os.listdir(made)) == ["dir", "fifo", "link-dir", "link-file"]   # not the owner's
    assert fs.sweep([str(made), str(tmp_path / "ov" / "hosts"), str(tmp_path / "ov" / "gone")]) == 4
    assert os.listdir(made) == []
    assert os.listdir(tmp_path / "ov" / "hosts") == ["theirs"]                   # not agent-made
    assert sorted(os.listdir(outside)) == ["d", "f"] and (outside / "f").read_text() == "kept"
