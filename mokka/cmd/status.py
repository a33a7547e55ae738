"""``mokka status``: a staged node at a glance."""

from __future__ import annotations

import os

import click

from mokka.cmd.common import CommandError, common_options, program, run_click
from mokka.node import staged_node_options


@click.command(help="Show the node staged under --host-root: its profile, the staged state's "
                    "digest, each GPU (index, name, UUID, MIG mode and MIG devices) as the mock "
                    "NVML library reports it, the runtime overrides mokka ctl set, and whether "
                    "the node agent and its daemons (fabricmanager, kernellog, mock-ib) run. "
                    "Reads only; nothing changes on the host.\n\n"
                    "Example: mokka status --host-root /tmp/node --json")
@staged_node_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of text.")
@common_options
def command(host_root: str, overlay_host_path: str, as_json: bool, gates) -> None:
    from mokka.node import NotStaged, staged_node_env, status

    try:
        overlay, variables = staged_node_env(host_root, overlay_host_path, os.environ)
        found = status.gather(os.path.abspath(host_root or "/"), overlay, variables)
    except (NotStaged, status.StatusError) as exc:
        raise CommandError(str(exc))
    click.echo(status.as_json(found) if as_json else status.render(found), nl=False)


def main(args: list[str], prog_name: str = "status") -> int:
    return run_click(command, args, program(prog_name))
