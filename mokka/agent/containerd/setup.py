"""The node's containerd, set up for Mokka: thin I/O around ``config`` (pure).

Apply reads the host's configuration (config.toml as the host had it, and the
files it imports), derives Mokka's file and the edited config.toml, converges
both through HostFS under their own owner (the host's config.toml is moved
aside first and moved back by Revoke, byte for byte), and restarts containerd
when either changed, and once per agent process. Revoke removes both and
queues a restart. A node that does not run containerd from its PATH, or whose
toolkit package paths hold files Mokka did not link, is left alone: nothing is
written, the simulator stays ready, and the log says why, once.
"""

from __future__ import annotations

import glob
import os

from mokka.agent.containerd import config as cc
from mokka.agent.containerd.restart import Restarter
from mokka.agent.containerd.toolkit import Toolkit
from mokka.agent.hostfs import File, HostFS
from mokka.core import names
from mokka.core.fsutil import atomic_write
from mokka.core.overlay import under

OWNER = "cri:containerd"


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def searched_path(root: str) -> str:
    """What the directories searched for containerd are, in a message."""
    return "the host's PATH" if root in ("", "/") else f"the host's PATH under --host-root {root}"


class ContainerdSetup:
    def __init__(self, root: str, settings: cc.Settings, fs: HostFS, log, restarter: Restarter,
                 toolkit: Toolkit | None = None,
                 path_dirs: tuple[str, ...] = tuple(names.DEFAULT_PATH.split(":"))):
        self.root = root
        self.settings = settings
        self.fs = fs
        self.log = log
        self.restarter = restarter
        self.toolkit = toolkit if toolkit is not None else Toolkit(root, log)
        self.path_dirs = path_dirs
        self._restarted = False          # once per agent process, whatever changed
        self._left_alone: str | None = None

    def host(self, path: str) -> str:
        return under(self.root, path)

    # --- decisions on the host's state ---------------------------------------
    def leave_alone(self) -> tuple[str, str] | None:
        """(log level, why) this node's runtime is not Mokka's to set up, or None.

        No containerd at all is information: a bare host (the quick start) or another
        runtime, nothing to fix. Another installer's toolkit files are a warning.
        """
        binary = names.CONTAINERD_BINARY
        searched = [self.host(d) for d in self.path_dirs]
        if not any(os.access(os.path.join(d, binary), os.X_OK) for d in searched):
            return "info", (f"no {binary} in {':'.join(searched)} ({searched_path(self.root)}): no "
                            "container runtime, or another one (CRI-O, or the containerd k3s and rke2 "
                            "embed); container runtime left alone")
        foreign = self.toolkit.foreign()
        if foreign is not None:
            return "warning", (f"{foreign} is not a link Mokka made: another installer prepared the "
                               "node for the NVIDIA Container Toolkit; container runtime left alone")
        return None

    def original_config(self) -> str | None:
        """config.toml as the host had it before Mokka edited it (None: it had none).

        If something else rewrote the file since Mokka's edit (config management, an
        admin), that file is the host's now: it replaces the moved-aside original, so
        neither this Apply nor Revoke throws the other writer's change away.
        """
        path = self.host(self.settings.config)
        backup = self.fs.manifest.backup_of(path)
        if backup is not None and os.path.lexists(backup):
            original, live = _read(backup), _read(path)
            if live is None or live == self._edited(original):
                return original
            atomic_write(backup, live, self._mode())
            self.log.warning("config.toml was changed by another writer since Mokka edited it: "
                             "taking that as the host's configuration", config=self.settings.config)
            return live
        if self.fs.manifest.owned(path):
            return None                  # Mokka created it: the host had none
        return _read(path)

    def _edited(self, original: str | None) -> str | None:
        try:
            return cc.edit_main(original, self.settings)
        except cc.ConfigError:
            return None

    def sources(self, main: str | None) -> list[tuple[str, str]]:
        """The host's files in containerd's merge order, Mokka's own left out."""
        if main is None:
            return []
        out = [(self.settings.config, main)]
        doc = cc.load(main, self.settings.config)
        for entry in cc.imports_of(doc, self.settings.config):
            pattern = cc.resolve_import(entry, self.settings.config)
            for found in sorted(glob.glob(self.host(pattern))):
                host_path = "/" + os.path.relpath(found, self.root) if self.root != "/" else found
                if host_path == self.settings.drop_in or not os.path.isfile(found):
                    continue
                text = _read(found)
                if text is not None:
                    out.append((host_path, text))
        return out

    # --- Apply / Revoke -------------------------------------------------------
    def apply(self) -> None:
        left_alone = self.leave_alone()
        if left_alone is not None:
            level, reason = left_alone
            if reason != self._left_alone:
                getattr(self.log, level)(reason)
                self._left_alone = reason
            return
        self._left_alone = None
        main = self.original_config()
        sources = self.sources(main)
        handler = self.toolkit.handler(main)
        tree = {self.host(self.settings.drop_in): File(cc.drop_in(sources, self.settings, handler).encode())}
        edited = cc.edit_main(main, self.settings)
        if edited != main:
            tree[self.host(self.settings.config)] = File(edited.encode(), self._mode())
        changed = self.fs.converge(OWNER, tree)
        if changed:
            self.log.info("containerd configuration written", drop_in=self.settings.drop_in,
                          config=self.settings.config, changed=changed)
            self._restart("Mokka's containerd configuration changed")
        elif not self._restarted:
            self._restart("the node agent started")

    def _restart(self, why: str) -> None:
        self._restarted = False          # until it succeeds: the retried pass restarts again
        self.restarter.restart(why)
        self._restarted = True

    def _mode(self) -> int:
        """The host's config.toml's mode (the original's, once it is moved aside)."""
        path = self.host(self.settings.config)
        for candidate in (self.fs.manifest.backup_of(path), path):
            if candidate and os.path.isfile(candidate):
                return os.stat(candidate).st_mode & 0o7777
        return 0o644

    def revoke(self) -> None:
        if not self.fs.manifest.paths(OWNER):
            return
        self.fs.remove_owner(OWNER)
        self.log.info("Mokka's containerd configuration removed; config.toml is the host's again",
                      drop_in=self.settings.drop_in)
        self.restarter.queue("Mokka's containerd configuration removed")

    def discard(self) -> None:
        self.fs.remove_owner(OWNER)
