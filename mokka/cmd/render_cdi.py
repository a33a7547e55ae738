"""``mokka render-cdi``: the CDI specs of a profile, printed or written."""

from __future__ import annotations

import os

import click

from mokka.cmd.common import CommandError, common_options, example, program, run_click
from mokka.core import names


@click.command(help="Print the CDI specs of a profile as one multi-document YAML, "
                    "or write both spec files atomically with --out.",
               epilog=example("mokka render-cdi --profile h100 --out /etc/cdi"))
@click.option("--profile", envvar="MOKKA_PROFILE", default=names.DEFAULT_PROFILE, show_default=True,
              help="A built-in profile name or the path of a profile file.")
@click.option("--host-root", envvar="MOKKA_HOST_ROOT", default="/", show_default=True,
              help="Prefix of every host path the specs name (a scratch root on test hosts).")
@click.option("--overlay-host-path", envvar="MOKKA_OVERLAY_HOST_PATH",
              default=names.OVERLAY_HOST_PATH, show_default=True,
              help="Where the overlay is staged on the host (before --host-root).")
@click.option("--node-name", envvar="NODE_NAME", default="",
              help="The node the specs are for: its GPUs' UUIDs name the devices, as the node "
                   "agent names them (empty: the profile's UUIDs). Env NODE_NAME.")
@click.option("--out", "out_dir", envvar="MOKKA_CDI_OUT", default=None,
              help="Write nvidia.yaml and nvml-mock-nri.yaml into this directory instead.")
@common_options
def command(profile: str, host_root: str, overlay_host_path: str, node_name: str, out_dir: str | None,
            gates) -> None:
    from mokka.core import cdi
    from mokka.core.compile import compile_profile
    from mokka.core.fsutil import atomic_write
    from mokka.core.overlay import host_overlay
    from mokka.core.profile import ProfileError, load

    try:
        state = compile_profile(load(profile), None, node_name, node_name)
    except ProfileError as exc:
        raise CommandError(str(exc))
    from mokka.engine import native
    # The node agent stages the mock NVML and CUDA libraries wherever this Mokka carries them.
    specs = cdi.specs(state, host_overlay(host_root, overlay_host_path),
                      nvml_library_staged=native.nvml_library() is not None,
                      cuda_library_staged=native.cuda_library() is not None,
                      proc_hook_staged=native.library(names.PROC_HOOK_FILE) is not None)
    if out_dir is None:
        click.echo("---\n".join(cdi.to_yaml(s) for s in specs.values()), nl=False)
        return
    for file_name, spec in specs.items():
        path = os.path.join(out_dir, file_name)
        try:
            atomic_write(path, cdi.to_yaml(spec))
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror}; pass a writable --out")
        click.echo(path)


def main(args: list[str], prog_name: str = "render-cdi") -> int:
    return run_click(command, args, program(prog_name))
