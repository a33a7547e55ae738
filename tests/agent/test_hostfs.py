"""The converger: write-ahead manifest, exact convergence, the mknod fallback."""

from __future__ import annotations

import os
import stat

from mokka.agent.hostfs import CharDev, Dir, File, HostFS, Link
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


def test_an_empty_directory_entry_is_kept_and_goes_once_unwanted(tmp_path):
    fs = fs_at(tmp_path)
    holders = tmp_path / "ov" / "module" / "nvidia_uvm" / "holders"
    fs.converge("o", {str(holders): Dir()})
    assert holders.is_dir() and os.listdir(holders) == []
    assert stat.S_IMODE(os.stat(holders).st_mode) == 0o755
    # Later it gains an entry of the same owner; both go at discard, the directory last.
    fs.converge("o", {str(holders): Dir(), str(holders / "nvidia_peermem"): Link("../../x")})
    fs.remove_owner("o")
    assert not (tmp_path / "ov" / "module").exists()


def test_a_directory_entry_replaces_a_file_at_its_path(tmp_path):
    fs = fs_at(tmp_path)
    path = tmp_path / "ov" / "holders"
    fs.converge("o", {str(path): File(b"x")})
    fs.converge("o", {str(path): Dir()})
    assert path.is_dir() and not path.is_symlink()


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


def test_read_only_files_of_equal_bytes_share_one_inode_and_part_when_one_changes(tmp_path):
    fs = fs_at(tmp_path)
    counters = [str(tmp_path / "ov" / "ib" / f"mlx5_{i}" / "symbol_error") for i in range(3)]
    writable = [str(tmp_path / "ov" / "dev" / f"umad{i}") for i in range(2)]
    tree = {p: File(b"0\n", 0o444) for p in counters}
    tree.update({p: File(b"", 0o666) for p in writable})
    tree[str(tmp_path / "ov" / "ib" / "mlx5_0" / "lid")] = File(b"0x1\n", 0o444)
    fs.converge("o", tree, share_inodes=True)
    assert len({os.stat(p).st_ino for p in counters}) == 1
    assert os.stat(counters[0]).st_nlink == 3
    assert len({os.stat(p).st_ino for p in writable}) == 2       # a write bit: a file each
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o444 for p in counters)
    assert fs.converge("o", tree, share_inodes=True) == 0         # converged: nothing rewritten

    tree[counters[1]] = File(b"7\n", 0o444)
    assert fs.converge("o", tree, share_inodes=True) == 1
    assert [open(p, "rb").read() for p in counters] == [b"0\n", b"7\n", b"0\n"]
    assert os.stat(counters[0]).st_ino == os.stat(counters[2]).st_ino != os.stat(counters[1]).st_ino
    assert not [n for n in os.listdir(tmp_path / "ov" / "ib" / "mlx5_1") if n.startswith(".")]

    fs.remove_owner("o")
    assert sorted(os.listdir(tmp_path / "ov")) == ["m.json"]


def test_a_path_that_held_other_bytes_is_replaced_by_a_link_to_the_shared_file(tmp_path):
    fs = fs_at(tmp_path)
    a, b = str(tmp_path / "ov" / "a"), str(tmp_path / "ov" / "b")
    fs.converge("o", {a: File(b"1\n", 0o444), b: File(b"2\n", 0o444)}, share_inodes=True)
    os.chmod(b, 0o644)
    with open(b, "wb") as f:
        f.write(b"tampered")                                    # root on a bare host
    assert fs.converge("o", {a: File(b"1\n", 0o444), b: File(b"1\n", 0o444)}, share_inodes=True) == 1
    assert open(b, "rb").read() == b"1\n" and os.stat(a).st_ino == os.stat(b).st_ino


def test_a_tree_converged_without_sharing_keeps_an_inode_per_file(tmp_path):
    fs = fs_at(tmp_path)
    paths = [str(tmp_path / "ov" / "config" / f"f{i}") for i in range(2)]
    fs.converge("o", {p: File(b"0\n", 0o444) for p in paths})
    assert os.stat(paths[0]).st_ino != os.stat(paths[1]).st_ino
