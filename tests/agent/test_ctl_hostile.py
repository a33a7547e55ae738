"""``mokka ctl`` over a node whose driver/config a workload has written (every injected
container has it bound writable): ctl never hangs, never follows a link, never copies a
file it has not parsed as data, gives new files mode 0644 and Mokka's content, replaces
what is in the place of its files, and a held lock makes it fail in one line naming the
holder. Run as the root ctl would be: against a node the real agent staged."""

from __future__ import annotations

import os
import shutil
import stat
import pytest
import yaml

from helpers import run_agent

from mokka.core import names
from mokka.core.overlay import host_overlay
from tests.locks import flock_held
from tests.native.staged import StagedNode, ctl, nvml_build, ok  # noqa: F401 (fixture)

SECRET = "s3cr3t-value-9f2c"


@pytest.fixture(scope="module")
def node(tmp_path_factory, nvml_build):
    root = str(tmp_path_factory.mktemp("hostile-ctl"))
    staged = run_agent(root, "--once", "--health-addr", "", "--profile", "t4")
    assert staged.returncode == 0, staged.stderr
    dev_root = os.path.join(root, "empty-dev-root")
    os.makedirs(dev_root)
    yield StagedNode(root, host_overlay(root), dev_root)
    done = run_agent(root, "--teardown")
    assert done.returncode == 0, done.stderr


@pytest.fixture
def outside(tmp_path):
    """A directory outside the tree, holding a root-only secret a link may point at."""
    secret = tmp_path / "secret.yaml"
    secret.write_text(f"thermal: {{temperature_gpu_c: 1}}\npassword: {SECRET}\n")
    secret.chmod(0o600)
    return tmp_path


@pytest.fixture(autouse=True)
def clean(node):
    yield
    ok(ctl(node, "reset"))
    for name in (names.XID_EVENTS_FILE, "xid-events.nvml"):
        path = os.path.join(node.overlay.driver_config, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def overrides(node: StagedNode, name: str = "gpu0.yaml") -> str:
    return os.path.join(node.overlay.overrides, name)


def assert_mokkas(path: str, want: dict) -> None:
    """A regular file of mode 0644 holding exactly the document Mokka wrote."""
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644, oct(st.st_mode)
    with open(path) as f:
        text = f.read()
    assert SECRET not in text
    assert yaml.safe_load(text) == want


def test_a_link_to_a_root_only_file_is_replaced_never_copied(node, outside):
    secret = str(outside / "secret.yaml")
    os.makedirs(node.overlay.overrides, exist_ok=True)
    os.symlink(secret, overrides(node))
    status = ok(ctl(node, "status"))
    assert SECRET not in status and "symbolic link" in status
    ok(ctl(node, "set", "0", "temperature=80"))
    assert_mokkas(overrides(node), {"thermal": {"temperature_gpu_c": 80}})
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    assert open(secret).read().endswith(f"password: {SECRET}\n")


@pytest.mark.parametrize("mode", [0o6777, 0o4755])
def test_a_setuid_document_gives_way_to_a_0644_one(node, mode):
    os.makedirs(node.overlay.overrides, exist_ok=True)
    with open(overrides(node), "w") as f:
        f.write("power: {current_draw_mw: 1000}\n")
    os.chmod(overrides(node), mode)
    ok(ctl(node, "set", "0", "temperature=81"))
    assert_mokkas(overrides(node), {"power": {"current_draw_mw": 1000}, "thermal": {"temperature_gpu_c": 81}})
    for name in ("gpu0.nvml",):
        assert stat.S_IMODE(os.lstat(overrides(node, name)).st_mode) == 0o644


def test_an_overrides_directory_swapped_for_a_link_sends_nothing_elsewhere(node, outside):
    elsewhere = outside / "elsewhere"
    elsewhere.mkdir()
    for name in ("all.yaml", "gpu0.yaml", "gpu0.nvml"):
        (elsewhere / name).write_text("kept: true\n")
    os.makedirs(node.overlay.overrides, exist_ok=True)
    os.rmdir(node.overlay.overrides)
    os.symlink(str(elsewhere), node.overlay.overrides)
    status = ok(ctl(node, "status"))
    assert "not a directory (a link or a file)" in status and "kept" not in status.replace(str(outside), "")
    assert os.path.islink(node.overlay.overrides)          # a reader refuses, changes nothing
    ok(ctl(node, "reset"))
    assert sorted(os.listdir(elsewhere)) == ["all.yaml", "gpu0.nvml", "gpu0.yaml"]
    os.symlink(str(elsewhere), node.overlay.overrides)
    ok(ctl(node, "set", "0", "temperature=82"))
    st = os.lstat(node.overlay.overrides)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755
    assert_mokkas(overrides(node), {"thermal": {"temperature_gpu_c": 82}})
    assert all((elsewhere / n).read_text() == "kept: true\n" for n in os.listdir(elsewhere))


def test_a_directory_named_like_a_document_is_removed_by_reset_and_set(node):
    # (A FIFO there is the mock NVML's to refuse: ctl's own nvmlInit reads the overrides.)
    os.makedirs(node.overlay.overrides, exist_ok=True)
    for index in (0, 1):
        os.makedirs(os.path.join(overrides(node, f"gpu{index}.yaml"), "deep"))
    ok(ctl(node, "reset", "0"))
    assert not os.path.lexists(overrides(node))
    ok(ctl(node, "set", "1", "temperature=83"))
    assert_mokkas(overrides(node, "gpu1.yaml"), {"thermal": {"temperature_gpu_c": 83}})


@pytest.mark.parametrize("verb", [("xid", "0", "79"), ("set", "0", "temperature=84")])
def test_a_held_lock_fails_ctl_in_one_line_naming_the_holder(node, verb):
    os.makedirs(node.overlay.overrides, exist_ok=True)
    locked = node.overlay.driver_config if verb[0] == "xid" else node.overlay.overrides
    with flock_held(locked) as holder:
        done = ctl(node, *verb)                    # bounded: the helper's timeout is a hang
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"ctl: {locked} is locked by pid {holder.pid}, held for over 5 s: end that process "
        "or wait for it, then run this again"]
    ok(ctl(node, *verb))                           # released: it goes through


@pytest.mark.parametrize("attack, reason", [
    (b"version: 1\nlast_seq: 3\nevents: 5\n", "events is not a list"),
    (b"version: 1\nlast_seq: 18446744073709551615\nevents: []\n", "last_seq is not an integer"),
    ("fifo", "it is a FIFO"),
    ("link", "it is a symbolic link"),
    ("directory", "it is a directory"),
])
def test_a_corrupt_events_file_is_replaced_and_the_numbering_recovers(node, outside, attack, reason):
    path = os.path.join(node.overlay.driver_config, names.XID_EVENTS_FILE)
    if attack == "fifo":
        os.mkfifo(path)
    elif attack == "link":
        os.symlink(str(outside / "secret.yaml"), path)
    elif attack == "directory":
        os.makedirs(os.path.join(path, "deep"))
    else:
        with open(path, "wb") as f:
            f.write(attack)
    done = ctl(node, "xid", "1", "79")
    assert done.returncode == 0, done.stderr
    assert f"ctl: {path}: not an events document Mokka wrote ({reason}" in done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert yaml.safe_load(done.stdout)["seq"] == 1
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644
    doc = yaml.safe_load(open(path))
    assert doc["last_seq"] == 1 and [(e["seq"], e["gpu"], e["code"]) for e in doc["events"]] == [(1, 1, 79)]
    assert yaml.safe_load(ok(ctl(node, "xid", "1", "48")))["seq"] == 2


def test_a_kernel_log_that_is_a_fifo_with_no_reader_fails_at_once(node, tmp_path):
    fifo = str(tmp_path / "kmsg")
    os.mkfifo(fifo)
    done = ctl(node, "xid", "0", "79", "--kmsg-path", fifo)       # the helper's timeout is a hang
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"ctl: Xid 79: reached the mock NVML only: cannot open the kernel log {fifo} (named by "
        "--kmsg-path): No such device or address; name another with --kmsg-path or MOKKA_CTL_KMSG_PATH")
