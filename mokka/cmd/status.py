"""``mokka status``: a staged node at a glance."""

from __future__ import annotations

import os

import click

from mokka.cmd.common import CommandError, common_options, program, run_click
from mokka.core import names


@click.command(help="Show the node staged under --host-root: its profile, the staged state's "
                    "digest, each GPU (index, name, UUID, MIG mode and MIG devices) as the mock "
                    "NVML library reports it, the runtime overrides mokka ctl set, and whether "
                    "the node agent and its daemons (fabricmanager, kernellog, mock-ib) run. "
                    "Reads only; nothing changes on the host.\n\n"
                    "Example: mokka status --host-root /tmp/node --json")
@click.option("--host-root", envvar="MOKKA_HOST_ROOT", default="/", show_default=True,
              help="Prefix of every host path (the --host-root the node agent staged under).")
@click.option("--overlay-host-path", envvar="MOKKA_OVERLAY_HOST_PATH",
              default=names.OVERLAY_HOST_PATH, show_default=True,
              help="Where the overlay is staged on the host (before --host-root).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of text.")
@common_options
def command(host_root: str, overlay_host_path: str, as_json: bool, gates) -> None:
    from mokka.node import NotStaged, staged_overlay
    from mokka.node import env, status
    from mokka.nri.nodeview import NodeViewBuilder

    try:
        overlay = staged_overlay(host_root, overlay_host_path)
    except NotStaged as exc:
        raise CommandError(str(exc))
    view = NodeViewBuilder(overlay_host_path=overlay.root, overlay_mount_path=overlay.root,
                           cdi_spec_host_path="", inotify=False).build()
    root = os.path.abspath(host_root or "/")
    try:
        found = status.gather(root, overlay, env.node_env(overlay.root, os.environ, view))
    except status.StatusError as exc:
        raise CommandError(str(exc))
    click.echo(status.as_json(found) if as_json else status.render(found), nl=False)


def main(args: list[str], prog_name: str = "status") -> int:
    return run_click(command, args, program(prog_name))
