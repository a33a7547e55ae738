"""``mokka env``: the shell lines that aim host tools at a staged node."""

from __future__ import annotations

import os

import click

from mokka.cmd.common import CommandError, common_options, program, run_click
from mokka.core import names


@click.command(help="Print the variables that aim host tools (NVIDIA's nvidia-smi, pynvml, "
                    "gpustat, nvitop, mokka ctl) at the node staged under --host-root: the mock "
                    "libnvidia-ml.so.1 and libcuda.so.1, the node's profile and overrides, the "
                    "staged nvidia-smi and nvml-mock-ctl. The same variables a GPU container on "
                    "that node gets. Nothing changes on the host.\n\n"
                    "Example: eval \"$(mokka env --host-root /tmp/node)\"; nvidia-smi -L")
@click.option("--host-root", envvar="MOKKA_HOST_ROOT", default="/", show_default=True,
              help="Prefix of every host path (the --host-root the node agent staged under).")
@click.option("--overlay-host-path", envvar="MOKKA_OVERLAY_HOST_PATH",
              default=names.OVERLAY_HOST_PATH, show_default=True,
              help="Where the overlay is staged on the host (before --host-root).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of shell lines.")
@common_options
def command(host_root: str, overlay_host_path: str, as_json: bool, gates) -> None:
    from mokka.node import NotStaged, staged_overlay
    from mokka.node import env
    from mokka.nri.nodeview import NodeViewBuilder

    try:
        overlay = staged_overlay(host_root, overlay_host_path)
    except NotStaged as exc:
        raise CommandError(str(exc))
    view = NodeViewBuilder(overlay_host_path=overlay.root, overlay_mount_path=overlay.root,
                           cdi_spec_host_path="", inotify=False).build()
    variables = env.node_env(overlay.root, os.environ, view)
    click.echo(env.json_text(variables) if as_json else env.shell_lines(variables), nl=False)


def main(args: list[str], prog_name: str = "env") -> int:
    return run_click(command, args, program(prog_name))
