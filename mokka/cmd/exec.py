"""``mokka exec``: run a command as a GPU-selected container sees the staged node."""

from __future__ import annotations

import click

from mokka.cmd.common import CommandError, UsageError, common_options, example, program, run_click
from mokka.core import names


@click.command(help="Run COMMAND in a private mount namespace where it sees what a GPU-selected "
                    "container sees: the environment, /dev/nvidia*, the node's PCI devices and "
                    "modules under /sys, /proc/driver and /proc/modules. MOCK_IB=full or sysfs in "
                    "the environment makes it an InfiniBand-selected one too (the IB variables, the "
                    "HCAs' PCI functions under /sys); unset or off, it is not. NVIDIA_VISIBLE_DEVICES "
                    "(GPU indices or UUIDs, comma-separated) gives it only those GPUs, as an "
                    "allocation does; unset or all, every GPU; none, void or empty, none. Needs root (the mounts); "
                    "nothing changes on the host. The exit status is COMMAND's.",
               epilog=example("sudo mokka exec --host-root /tmp/node -- nvidia-smi -L"),
               # COMMAND's own options are its own: options end at the first argument.
               context_settings={"allow_interspersed_args": False})
@click.option("--host-root", envvar="MOKKA_HOST_ROOT", default="/", show_default=True,
              help="Prefix of every host path (the --host-root the node agent staged under).")
@click.option("--overlay-host-path", envvar="MOKKA_OVERLAY_HOST_PATH",
              default=names.OVERLAY_HOST_PATH, show_default=True,
              help="Where the overlay is staged on the host (before --host-root).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@common_options
def command(host_root: str, overlay_host_path: str, command: tuple[str, ...], gates) -> None:
    from mokka.exec import ExecError, run
    if not command:
        raise UsageError("missing COMMAND (the command to run, after --)")
    try:
        run(host_root, overlay_host_path, command)
    except ExecError as exc:
        raise CommandError(str(exc))


def main(args: list[str], prog_name: str = "exec") -> int:
    return run_click(command, args, program(prog_name))
