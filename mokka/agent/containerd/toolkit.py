"""The NVIDIA Container Toolkit release the image may carry, and its ``nvidia`` handler.

The release is found as ``nvidia-ctk`` on the agent's PATH with
``nvidia-container-runtime`` and ``nvidia-cdi-hook`` beside it. It is installed
at the seed's paths (the binaries and the runtime's config.toml in
TOOLKIT_INSTALL_DIR, links at the package paths), and these stay after Revoke:
containers created through the handler call the runtime for exec, kill and
delete. Then its own ``nvidia-ctk runtime configure`` runs with the seed's
flags, but on private copies: the host's original config.toml as ``--config``
and a scratch ``--drop-in-config``. Its handler tables are what Mokka keeps;
Mokka adds the import to the host's file itself (comments kept, restorable)
instead of letting nvidia-ctk rewrite it, and the paths it passes are the host's
as containerd sees them, whatever --host-root is.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from typing import Callable

from mokka.agent.containerd.restart import Runner, run
from mokka.core import names
from mokka.core.fsutil import atomic_symlink, atomic_write
from mokka.core.overlay import under

#: The runtime's configuration: CDI mode, the toolkit's default kind.
RUNTIME_CONFIG = f"""# Written by Mokka's node agent: the NVIDIA Container Runtime in CDI mode.
[nvidia-container-runtime]
mode = "cdi"

[nvidia-container-runtime.modes.cdi]
default-kind = "{names.CDI_KIND_GPU}"
"""


class ToolkitError(RuntimeError):
    pass


def package_links() -> dict[str, str]:
    """Package path -> the link target Mokka puts there (host paths)."""
    links = {posixpath.join(names.TOOLKIT_PACKAGE_BIN_DIR, b): posixpath.join(names.TOOLKIT_INSTALL_DIR, b)
             for b in names.TOOLKIT_BINARIES}
    links[names.TOOLKIT_RUNTIME_CONFIG] = posixpath.join(names.TOOLKIT_INSTALL_DIR,
                                                         names.TOOLKIT_RUNTIME_CONFIG_FILE)
    return links


def configure_argv(ctk: str, config: str, drop_in: str) -> list[str]:
    """The seed's ``nvidia-ctk runtime configure`` command line."""
    return [ctk, "runtime", "configure", "--runtime=containerd", "--config-source=file",
            f"--config={config}", f"--drop-in-config={drop_in}",
            f"--nvidia-runtime-name={names.TOOLKIT_HANDLER}",
            f"--nvidia-runtime-path={posixpath.join(names.TOOLKIT_PACKAGE_BIN_DIR, names.TOOLKIT_RUNTIME)}",
            "--nvidia-set-as-default", "--cdi.enabled"]


class Toolkit:
    def __init__(self, root: str, log, which: Callable[[str], str | None] = shutil.which,
                 runner: Runner = run):
        self.root = root
        self.log = log
        self.which = which
        self.runner = runner
        self._skip_logged = False

    def foreign(self) -> str | None:
        """A package path holding something Mokka did not link there, if any."""
        for path, target in package_links().items():
            host = under(self.root, path)
            if os.path.lexists(host) and not (os.path.islink(host) and os.readlink(host) == target):
                return path
        return None

    def release(self) -> str | None:
        ctk = self.which(names.TOOLKIT_CTK)
        if ctk is None:
            return None
        folder = os.path.dirname(os.path.abspath(ctk))
        if all(os.access(os.path.join(folder, b), os.X_OK) for b in names.TOOLKIT_BINARIES):
            return folder
        return None

    def handler(self, host_config: str | None) -> str | None:
        """Install the release and return nvidia-ctk's handler file; None without a release."""
        release = self.release()
        if release is None:
            if not self._skip_logged:
                self._skip_logged = True
                self.log.warning("no NVIDIA Container Toolkit release in the image (no "
                                 f"{' + '.join(names.TOOLKIT_BINARIES)} on PATH): the "
                                 f"{names.TOOLKIT_HANDLER!r} handler is skipped; CDI and NRI are "
                                 "set up without it")
            return None
        self.install(release)
        with tempfile.TemporaryDirectory(prefix="mokka-ctk-") as tmp:
            config = os.path.join(tmp, "config.toml")
            drop_in = os.path.join(tmp, "conf.d", names.CONTAINERD_DROP_IN_FILE)
            if host_config is not None:
                atomic_write(config, host_config)
            argv = configure_argv(os.path.join(release, names.TOOLKIT_CTK), config, drop_in)
            status, output = self.runner(argv)
            if status != 0:
                raise ToolkitError(f"`{' '.join(argv[:3])}` exited {status}: {output}")
            try:
                with open(drop_in) as f:
                    return f.read()
            except FileNotFoundError:
                raise ToolkitError(f"`{' '.join(argv[:3])}` wrote no drop-in file") from None

    def install(self, release: str) -> None:
        for binary in names.TOOLKIT_BINARIES:
            with open(os.path.join(release, binary), "rb") as f:
                data = f.read()
            atomic_write(under(self.root, posixpath.join(names.TOOLKIT_INSTALL_DIR, binary)), data, 0o755)
        atomic_write(under(self.root, posixpath.join(names.TOOLKIT_INSTALL_DIR,
                                                     names.TOOLKIT_RUNTIME_CONFIG_FILE)), RUNTIME_CONFIG)
        for path, target in package_links().items():
            atomic_symlink(target, under(self.root, path))
