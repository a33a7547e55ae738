"""``mokka compile``: the compiled state of a profile, as JSON; or, with
``--companion``, the compiled companion the mock NVML library reads beside a file."""

from __future__ import annotations

import os

import click

from mokka.cmd.common import CommandError, common_options, example, program, run_click
from mokka.core import names


@click.command(help="Print the state a profile compiles to (what the mock NVML library reads), or "
                    "with --companion write the compiled file the mock NVML library reads "
                    "beside a profile (with --topology and --node-name applied) or an override "
                    "document (overrides/all.yaml, overrides/gpuN.yaml).",
               epilog=example("mokka compile --profile a100"))
@click.option("--profile", envvar="MOKKA_PROFILE", default=names.DEFAULT_PROFILE, show_default=True,
              help="A built-in profile name or the path of a profile file.")
@click.option("--topology", envvar="MOKKA_TOPOLOGY", default=None,
              help="A ComputeDomain topology document to apply for --node-name.")
@click.option("--node-name", envvar="NODE_NAME", default="",
              help="This node's Kubernetes name: the GPUs get its identities, as the node agent "
                   "gives them (UUIDs, serials, board ids, NVLink cluster UUID). Env NODE_NAME.")
@click.option("--companion", "companion_of", envvar="MOKKA_COMPILE_COMPANION", default=None,
              metavar="FILE.yaml",
              help="Write FILE.nvml (and state.json beside a profile) instead of printing. "
                   "Env MOKKA_COMPILE_COMPANION.")
@common_options
def command(profile: str, topology: str | None, node_name: str, companion_of: str | None,
            gates) -> None:
    doc = _topology(topology) if topology else None
    if companion_of:
        click.echo(write_companion(companion_of, doc, node_name))
        return
    from mokka.core import compile as comp
    from mokka.core.profile import ProfileError, load

    try:
        state = comp.compile_profile(load(profile), doc, node_name, node_name)
    except ProfileError as exc:
        raise CommandError(str(exc))
    click.echo(comp.dumps(state), nl=False)


def _topology(path: str) -> dict:
    from mokka.core import topology as topo
    from mokka.core import yamlio
    from mokka.core.profile import ProfileError, read_file, yaml_problem
    try:
        return topo.validate(yamlio.safe_load(read_file(path, "topology document")), path)
    except ProfileError as exc:
        raise CommandError(str(exc))
    except yamlio.YAMLError as exc:
        raise CommandError(f"{path}: {yaml_problem(exc)}")
    except topo.TopologyError as exc:
        raise CommandError(f"{path}: invalid topology document: {exc}")


def kind_of(path: str, doc) -> str:
    """What a YAML document is: one of the overrides (by its name: all.yaml, gpu<N>.yaml,
    lasting-gpu<N>.yaml), a topology document or a profile."""
    from mokka.engine.overrides import is_lasting, is_scope

    stem, _, suffix = os.path.basename(path).rpartition(".")
    profile_keys = isinstance(doc, dict) and bool(set(doc) & {"system", "device_defaults", "devices"})
    if suffix == "yaml" and (is_scope(stem) or is_lasting(stem)) and not profile_keys:
        return "overrides"
    if isinstance(doc, dict) and "domains" in doc:
        return "topology"
    if isinstance(doc, dict) and doc and set(doc) <= {"version", "all", "devices"}:
        raise CommandError(f"{path}: an overrides file of one document for every GPU: write each "
                           f"scope as its own file in {names.OVERRIDES_DIR}/ beside config.yaml "
                           f"({names.overrides_scope_file(None)}, {names.overrides_scope_file(0)}, ...) "
                           "and compile each")
    return "profile"


def _companion(kind: str, path: str, text: bytes, doc, topology_doc: dict | None, node_name: str) -> bytes:
    from mokka.core import compile as comp
    from mokka.engine import flatstate
    from mokka.core.profile import ProfileError, parse

    if kind == "topology":
        # The library reads no topology document: compile applies it to the state.
        raise CommandError(f"{path}: a topology document has no companion: compile the profile "
                           f"with --topology {path} --node-name NODE, which applies it")
    if kind == "overrides":
        if doc is not None and not isinstance(doc, dict):
            raise CommandError(f"{path}: an overrides document is a mapping of GPU fields")
        return flatstate.overrides_companion(doc, text)
    try:
        state = comp.compile_profile(parse(text, source=path, path=path), topology_doc, node_name,
                                     node_name)
    except ProfileError as exc:
        raise CommandError(str(exc))
    return flatstate.state_companion(state)


def write_companion(path: str, topology_doc: dict | None, node_name: str) -> str:
    """Write the companion of ``path``; return the line to print."""
    from mokka.core import yamlio
    from mokka.engine import flatstate
    from mokka.core.profile import ProfileError, read_file, yaml_problem
    from mokka.engine import pair

    try:
        text = read_file(path, "")
        doc = yamlio.safe_load(text)
    except ProfileError as exc:
        raise CommandError(str(exc))
    except yamlio.YAMLError as exc:
        raise CommandError(f"{path}: {yaml_problem(exc)}")
    kind = kind_of(path, doc)
    try:
        out = pair.write_companion(path, _companion(kind, path, text, doc, topology_doc, node_name))
    except flatstate.CompanionError as exc:
        raise CommandError(f"{path}: {exc}")
    return f"wrote {out} ({kind})"


def main(args: list[str], prog_name: str = "compile") -> int:
    return run_click(command, args, program(prog_name))
