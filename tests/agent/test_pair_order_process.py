"""Every writer publishes a document pair in one order, the companion first and the YAML
last (mokka.engine.pair), as inotify sees the renames: the agent staging a new profile, its
kernellog injecting an Xid, ``mokka ctl xid`` and ``mokka ctl set``. A reader between the
two renames so finds a companion no older than its YAML, which the library reads again."""

from __future__ import annotations

import os

from inotify_simple import INotify, flags

from helpers import start_xid_node
from test_ctl_xid_process import ctl
from test_kernellog_process import XID13, inject
from tests.waiting import wait_until

from tests.native.staged import nvml_build  # noqa: F401 (fixture: the agent stages this library)


class Renames:
    """The names renamed into a directory, in order."""

    def __init__(self, directory: str):
        self.watch = INotify(nonblocking=True)
        self.watch.add_watch(directory, flags.MOVED_TO)
        self.seen: list[str] = []

    def read(self) -> list[str]:
        self.seen += [e.name for e in self.watch.read(timeout=0)]
        return self.seen

    def close(self) -> None:
        self.watch.close()


def published_in_order(seen: list[str], stem: str) -> bool:
    """Each rename of ``stem``.yaml follows a rename of ``stem``.nvml made since the one before."""
    companion_pending = False
    for name in seen:
        if name == f"{stem}.nvml":
            companion_pending = True
        elif name == f"{stem}.yaml":
            if not companion_pending:
                return False
            companion_pending = False
    return True


def test_every_writer_renames_the_companion_before_the_yaml(scratch, nvml_build):
    node = start_xid_node(scratch)
    agent, ov, profile, healthy, env = node.agent, node.overlay, node.profile, node.healthy, node.ctl_env
    config = Renames(ov.driver_config)
    try:
        with open(profile, "wb") as f:                     # a new profile, injecting an Xid
            f.write(inject(healthy, 2, XID13))
        wait_until(lambda: {"config.yaml", "xid-events.yaml"} <= set(config.read()),
                   what="the agent's new profile and Xid event")
        done = ctl("xid", "1", "79", env=env)
        assert done.returncode == 0, done.stderr
        assert config.read().count("xid-events.yaml") == 2
        done = ctl("set", "1", "temperature=85", env=env)
        assert done.returncode == 0, done.stderr
        overrides = os.listdir(ov.overrides)
        assert sorted(overrides) == ["gpu1.nvml", "gpu1.yaml"], overrides
        again = Renames(ov.overrides)
        try:
            done = ctl("set", "1", "temperature=90", env=env)
            assert done.returncode == 0, done.stderr
            assert again.read() == ["gpu1.nvml", "gpu1.yaml"]
        finally:
            again.close()
        seen = config.read()
    finally:
        config.close()
    assert published_in_order(seen, "config") and published_in_order(seen, "xid-events"), seen
    assert agent.terminate() == 0
