"""fsutil under what a workload can leave where Mokka keeps a file: writes replace it (never
through it, never keeping its mode), reads refuse it without blocking or following, and a
held lock is waited for within a bound, then named with its holder's pid."""

from __future__ import annotations

import os
import stat

import pytest

from mokka.core import fsutil
from tests.deeptree import nested
from tests.locks import flock_held


def kinds(tmp_path):
    """Things a workload can put at a path, each made by a function of the path."""
    target = tmp_path / "target"
    target.write_bytes(b"the target's\n")
    target.chmod(0o600)
    setuid = tmp_path / "setuid"
    setuid.write_bytes(b"#!/bin/sh\n")
    setuid.chmod(0o4755)
    return {
        "fifo": lambda p: os.mkfifo(p),
        "link to a 0600 file": lambda p: os.symlink(str(target), p),
        "link to a 4755 file": lambda p: os.symlink(str(setuid), p),
        "6777 file": lambda p: (open(p, "wb").write(b"x"), os.chmod(p, 0o6777)),
        "dangling link": lambda p: os.symlink(str(tmp_path / "nowhere"), p),
    }


@pytest.mark.parametrize("kind", ["fifo", "link to a 0600 file", "link to a 4755 file", "6777 file",
                                  "dangling link"])
def test_atomic_write_replaces_whatever_is_there_with_a_file_of_its_mode(tmp_path, kind):
    path = str(tmp_path / "config" / "x.yaml")
    os.makedirs(os.path.dirname(path))
    kinds(tmp_path)[kind](path)
    assert fsutil.atomic_write(path, b"mokka's\n", 0o644) is True
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644
    assert open(path, "rb").read() == b"mokka's\n"
    assert (tmp_path / "target").read_bytes() == b"the target's\n"
    assert stat.S_IMODE((tmp_path / "target").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "setuid").stat().st_mode) == 0o4755
    assert not os.path.exists(tmp_path / "nowhere")


def test_atomic_write_through_a_directory_fd_is_not_redirected_by_a_swapped_directory(tmp_path):
    real, elsewhere = tmp_path / "real", tmp_path / "elsewhere"
    real.mkdir()
    elsewhere.mkdir()
    fd = os.open(str(real), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.rename(real, tmp_path / "moved")
        os.symlink(str(elsewhere), str(real))
        fsutil.atomic_write("doc.yaml", b"a: 1\n", dir_fd=fd)
    finally:
        os.close(fd)
    assert os.listdir(elsewhere) == [] and os.listdir(tmp_path / "moved") == ["doc.yaml"]


def test_atomic_write_names_a_directory_in_the_way_or_replaces_it(tmp_path):
    path = tmp_path / "x.yaml"
    (path / "deep").mkdir(parents=True)
    with pytest.raises(IsADirectoryError) as got:
        fsutil.atomic_write(str(path), b"a\n")
    assert got.value.filename == str(path)
    assert sorted(os.listdir(tmp_path)) == ["x.yaml"]      # no temp file left
    os.symlink(str(tmp_path / "x.yaml"), path / "deep" / "back")
    assert fsutil.atomic_write(str(path), b"a\n", replace_dir=True) is True
    assert sorted(os.listdir(tmp_path)) == ["x.yaml"] and path.read_bytes() == b"a\n"


def test_read_without_following_refuses_a_link_and_a_fifo_at_once(tmp_path):
    os.symlink("/etc/hostname", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(fsutil.ReadRefused, match="is a symbolic link, not a regular file"):
        fsutil.read_bounded(str(tmp_path / "link"), 1 << 20, follow=False)
    with pytest.raises(fsutil.ReadRefused, match="is a FIFO, not a regular file"):
        fsutil.read_bounded(str(tmp_path / "fifo"), 1 << 20, follow=False)


def test_remove_at_empties_a_directory_without_following_its_links(tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "file").write_text("kept\n")
    made = tmp_path / "config" / "gpu0.yaml" / "deep"
    made.mkdir(parents=True)
    os.symlink(str(kept), made / "out")
    os.mkfifo(made / "pipe")
    fd = os.open(str(tmp_path / "config"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert fsutil.remove_at(fd, "gpu0.yaml") is True
        assert fsutil.remove_at(fd, "gpu0.yaml") is False
    finally:
        os.close(fd)
    assert os.listdir(tmp_path / "config") == [] and (kept / "file").read_text() == "kept\n"


def test_a_held_directory_lock_is_waited_for_within_the_bound_and_names_its_holder(tmp_path):
    directory = str(tmp_path / "config")
    os.makedirs(directory)
    seen = []
    with flock_held(directory) as holder:
        with pytest.raises(fsutil.LockHeld) as got:
            with fsutil.dir_locked(os.path.join(directory, "x.yaml"), timeout=0.1):
                pass
        assert str(got.value) == (f"{directory} is locked by pid {holder.pid}, held for over 0.1 s: "
                                  "end that process or wait for it, then run this again")
        with fsutil.dir_locked_or_not(os.path.join(directory, "x.yaml"), 0.1, seen.append) as held:
            assert held is False
        assert [e.pid for e in seen] == [str(holder.pid)]
    with fsutil.dir_locked_or_not(os.path.join(directory, "x.yaml"), 0.1, seen.append) as held:
        assert held is True


def test_atomic_link_writes_a_file_of_its_own_where_the_file_system_will_not_link(tmp_path, monkeypatch):
    source, path = str(tmp_path / "source"), str(tmp_path / "path")
    fsutil.atomic_write(source, b"0\n", 0o444)

    def cross_device(*args, **kwargs):
        raise OSError(18, "Invalid cross-device link")
    monkeypatch.setattr(os, "link", cross_device)
    assert fsutil.atomic_link(source, path, b"0\n", 0o444) is True
    st = os.stat(path)
    assert open(path, "rb").read() == b"0\n" and stat.S_IMODE(st.st_mode) == 0o444
    assert st.st_ino != os.stat(source).st_ino
    assert sorted(os.listdir(tmp_path)) == ["path", "source"]


def test_atomic_link_replaces_a_link_in_its_place_without_writing_through_it(tmp_path):
    source, path, victim = (str(tmp_path / n) for n in ("source", "path", "victim"))
    fsutil.atomic_write(source, b"0\n", 0o444)
    fsutil.atomic_write(victim, b"keep", 0o644)
    os.symlink(victim, path)
    assert fsutil.atomic_link(source, path, b"0\n", 0o444) is True
    assert not os.path.islink(path) and os.stat(path).st_ino == os.stat(source).st_ino
    assert open(victim, "rb").read() == b"keep"


REMOVE_UNDER_64_FDS = """
import os, resource, sys
from mokka.core import fsutil
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
print(fsutil.remove_at(fd, "deep"), os.listdir(fd))
"""


def test_remove_at_takes_a_tree_3000_deep_with_64_descriptors_and_no_recursion(tmp_path):
    import subprocess
    import sys

    nested(str(tmp_path / "deep"), 3000)
    done = subprocess.run([sys.executable, "-c", REMOVE_UNDER_64_FDS, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert (done.returncode, done.stdout, done.stderr) == (0, "True []\n", "")


@pytest.mark.parametrize("kind", ["link to a directory", "file", "fifo", "another user's directory",
                                  "dangling link"])
def test_own_dir_at_replaces_what_is_there_and_never_chmods_through_it(tmp_path, kind):
    host = tmp_path / "host-dir"
    host.mkdir()
    host.chmod(0o755)
    config = tmp_path / "config"
    config.mkdir()
    at = config / "processes"
    if kind == "link to a directory":
        os.symlink(str(host), at)
    elif kind == "file":
        at.write_text("x\n")
    elif kind == "fifo":
        os.mkfifo(at)
    elif kind == "dangling link":
        os.symlink(str(tmp_path / "made"), at)
    else:
        at.mkdir()
        os.chown(at, 65534, 65534)
    fd = os.open(str(config), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fsutil.own_dir_at(fd, "processes", 0o1777)
    finally:
        os.close(fd)
    st = os.lstat(at)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o1777 and st.st_uid == os.geteuid()
    assert stat.S_IMODE(os.stat(host).st_mode) == 0o755
    assert not os.path.lexists(tmp_path / "made")


def test_own_dir_at_keeps_its_own_directory_and_what_is_in_it(tmp_path):
    (tmp_path / "processes").mkdir(mode=0o700)
    (tmp_path / "processes" / "0.0123456789abcdef").write_text("record\n")
    fd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fsutil.own_dir_at(fd, "processes", 0o1777)
    finally:
        os.close(fd)
    assert stat.S_IMODE(os.lstat(tmp_path / "processes").st_mode) == 0o1777
    assert os.listdir(tmp_path / "processes") == ["0.0123456789abcdef"]


def test_a_device_node_where_a_file_belongs_is_refused_without_being_opened(tmp_path):
    """A container's default capabilities allow mknod: a node of a host device where Mokka
    keeps a file must not be opened by root on the host (opening a watchdog arms it).
    inotify reports every open of the node's inode; none may come."""
    from inotify_simple import INotify, flags

    node, control = tmp_path / "config.yaml", tmp_path / "control"
    for each in (node, control):
        os.mknod(each, stat.S_IFCHR | 0o644, os.makedev(1, 3))          # /dev/null's numbers
    with INotify(nonblocking=True) as watch:
        watch.add_watch(str(node), flags.OPEN)
        watch.add_watch(str(control), flags.OPEN)
        for follow in (True, False):
            with pytest.raises(fsutil.ReadRefused, match="is a character device, not a regular file"):
                fsutil.read_bounded(str(node), 1 << 20, follow=follow)
        assert fsutil.atomic_write(str(node), b"a\n") is True             # replaced, never opened
        assert [e for e in watch.read(timeout=0) if e.mask & flags.OPEN] == []
        os.close(os.open(str(control), os.O_RDONLY))                      # what an open looks like
        assert [e.mask & flags.OPEN for e in watch.read(timeout=0)] == [flags.OPEN]
    assert node.read_bytes() == b"a\n" and stat.S_ISREG(os.lstat(node).st_mode)
