"""A staged node seen from the host: what aims host tools at it (``env``) and what it
is at a glance (``status``). Both read what the node agent staged under a host root
and change nothing there.
"""

from __future__ import annotations

import os

from mokka.core import names
from mokka.core.overlay import Overlay, host_overlay

#: What to run before either command can say anything about a host root.
STAGE_FIRST = "mokka node-agent --once --host-root {root}"


class NotStaged(Exception):
    """No node is staged under the host root: one line naming it and what to run first."""

    def __init__(self, host_root: str, overlay: Overlay):
        root = host_root or "/"
        super().__init__(f"no node staged under {root} ({overlay.profile} is missing); "
                         f"stage one first: {STAGE_FIRST.format(root=root)}")


def staged_overlay(host_root: str, overlay_host_path: str = names.OVERLAY_HOST_PATH) -> Overlay:
    """The overlay of the node staged under ``host_root``, or NotStaged.

    A node is staged once its profile copy is there: the file MOCK_NVML_CONFIG names."""
    overlay = host_overlay(os.path.abspath(host_root or "/"), overlay_host_path)
    if not os.path.isfile(overlay.profile):
        raise NotStaged(host_root, overlay)
    return overlay


def staged_node_env(host_root: str, overlay_host_path: str, environ) -> tuple[Overlay, dict[str, str]]:
    """The staged node's overlay and the variables that aim a caller with ``environ`` at it
    (NotStaged when there is none): what ``env`` prints and ``status`` reads through."""
    from mokka.node import env
    from mokka.nri.nodeview import NodeViewBuilder

    overlay = staged_overlay(host_root, overlay_host_path)
    view = NodeViewBuilder(overlay_host_path=overlay.root, overlay_mount_path=overlay.root,
                           cdi_spec_host_path="", inotify=False).build()
    return overlay, env.node_env(overlay.root, environ, view)


def staged_node_options(fn):
    """--host-root and --overlay-host-path, as env and status take them."""
    import click

    fn = click.option("--overlay-host-path", envvar="MOKKA_OVERLAY_HOST_PATH",
                      default=names.OVERLAY_HOST_PATH, show_default=True,
                      help="Where the overlay is staged on the host (before --host-root).")(fn)
    return click.option("--host-root", envvar="MOKKA_HOST_ROOT", default="/", show_default=True,
                        help="Prefix of every host path (the --host-root the node agent "
                             "staged under).")(fn)
