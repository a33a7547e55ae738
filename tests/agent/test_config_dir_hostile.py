"""``node-agent --once`` and ``--teardown`` after a workload replaced the files Mokka keeps in
driver/config (bound writable into every injected container) with directories, FIFOs and
links out of the tree: the next run puts Mokka's own files back (regular, mode 0644, the
staged bytes), teardown leaves the root as found, and nothing a link names is touched."""

from __future__ import annotations

import os
import shutil
import stat

from helpers import run_agent
from treelist import diff, listing

from mokka.core import names
from mokka.core.overlay import host_overlay


def replace(path: str, kind: str, outside: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    if kind == "directory":
        os.makedirs(os.path.join(path, "deep"))
        with open(os.path.join(path, "deep", "blob"), "wb") as f:
            f.write(b"\0" * 64)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        os.symlink(os.path.join(outside, "host-file"), path)
    elif kind == "link to a directory":
        os.symlink(outside, path)
    else:
        with open(path, "w") as f:
            f.write(kind)


def test_once_and_teardown_put_back_what_a_workload_replaced(scratch):
    root, outside, _ = scratch
    kept = os.path.join(outside, "kept")
    os.makedirs(kept)
    with open(os.path.join(kept, "host-file"), "w") as f:
        f.write("the host's\n")
    for name in ("all.yaml", "gpu0.yaml"):
        with open(os.path.join(kept, name), "w") as f:
            f.write("kept: true\n")
    before = listing(root)
    first = run_agent(root, "--once", "--health-addr", "", "--profile", "t4")
    assert first.returncode == 0, first.stderr
    ov = host_overlay(root)
    config = ov.driver_config
    staged = {name: open(os.path.join(config, name), "rb").read()
              for name in ("config.yaml", "config.nvml", "machine-type")}
    attacks = {"config.yaml": "directory", "config.nvml": "fifo", "machine-type": "link",
               names.OVERRIDES_DIR: "link to a directory"}
    for name, kind in attacks.items():
        replace(os.path.join(config, name), kind, kept)

    again = run_agent(root, "--once", "--health-addr", "", "--profile", "t4")
    assert again.returncode == 0, again.stderr
    for name, data in staged.items():
        st = os.lstat(os.path.join(config, name))
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644, name
        assert open(os.path.join(config, name), "rb").read() == data, name
    assert not os.path.lexists(ov.overrides)           # the link is gone, not what it names
    assert sorted(os.listdir(kept)) == ["all.yaml", "gpu0.yaml", "host-file"]

    for name, kind in {**attacks, names.XID_EVENTS_FILE: "directory"}.items():
        replace(os.path.join(config, name), kind, kept)
    done = run_agent(root, "--teardown")
    assert done.returncode == 0, done.stderr
    after = listing(root)
    assert after == before, diff(before, after)
    assert sorted(os.listdir(kept)) == ["all.yaml", "gpu0.yaml", "host-file"]
    assert open(os.path.join(kept, "host-file")).read() == "the host's\n"
