"""``mokka compile``: the compiled engine state of a profile, as JSON."""

from __future__ import annotations

import click

from mokka.cmd.common import CommandError, common_options
from mokka.core import names


@click.command(help="Print the engine state a profile compiles to (what nvidia-smi reads).")
@click.option("--profile", envvar="MOKKA_PROFILE", default=names.DEFAULT_PROFILE, show_default=True,
              help="A built-in profile name or the path of a profile file.")
@click.option("--topology", envvar="MOKKA_TOPOLOGY", default=None,
              help="A ComputeDomain topology document to apply for --node-name.")
@click.option("--node-name", envvar="NODE_NAME", default="", help="This node's Kubernetes name.")
@common_options
def command(profile: str, topology: str | None, node_name: str, gates) -> None:
    from mokka.core import compile as comp
    from mokka.core import topology as topo
    from mokka.core.profile import ProfileError, load

    doc = None
    if topology:
        from mokka.core import yamlio
        try:
            with open(topology, "rb") as f:
                doc = topo.validate(yamlio.safe_load(f), topology)
        except (OSError, yamlio.YAMLError, topo.TopologyError) as exc:
            raise CommandError(f"{topology}: invalid topology document: {exc}")
    try:
        state = comp.compile_profile(load(profile), doc, node_name)
    except ProfileError as exc:
        raise CommandError(str(exc))
    click.echo(comp.dumps(state), nl=False)


def main(args: list[str], prog_name: str = "compile") -> int:
    return command.main(args=args, prog_name=f"mokka {prog_name}", standalone_mode=True)
