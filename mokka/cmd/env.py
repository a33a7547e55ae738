"""``mokka env``: the shell lines that aim host tools at a staged node."""

from __future__ import annotations

import os

import click

from mokka.cmd.common import CommandError, common_options, program, run_click
from mokka.node import staged_node_options


@click.command(help="Print the variables that aim host tools (NVIDIA's nvidia-smi, pynvml, "
                    "gpustat, nvitop, mokka ctl) at the node staged under --host-root: the mock "
                    "libnvidia-ml.so.1 and libcuda.so.1, the node's profile and overrides, the "
                    "staged nvidia-smi and nvml-mock-ctl. The same variables a GPU container on "
                    "that node gets. Nothing changes on the host.\n\n"
                    "Example: eval \"$(mokka env --host-root /tmp/node)\"; nvidia-smi -L")
@staged_node_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of shell lines.")
@common_options
def command(host_root: str, overlay_host_path: str, as_json: bool, gates) -> None:
    from mokka.node import NotStaged, env, staged_node_env

    try:
        _, variables = staged_node_env(host_root, overlay_host_path, os.environ)
    except NotStaged as exc:
        raise CommandError(str(exc))
    click.echo(env.json_text(variables) if as_json else env.shell_lines(variables), nl=False)


def main(args: list[str], prog_name: str = "env") -> int:
    return run_click(command, args, program(prog_name))
