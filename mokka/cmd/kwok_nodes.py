"""``mokka kwok-nodes``: Node objects for KWOK with the labels and resources of GPU nodes."""

from __future__ import annotations

import sys

import click

from mokka.cmd.common import CommandError, common_options, program, run_click
from mokka.core import names

STRATEGIES = ("none", "single", "mixed")


@click.command(help="Print Node objects for KWOK (kwok.x-k8s.io): nodes that carry the labels "
                    "NVIDIA's gpu-feature-discovery writes for the profile's board and the "
                    "resources NVIDIA's device plugin advertises, so a scheduler can be tested "
                    "on more GPU nodes than a cluster has. Nothing is staged; the output is a "
                    "YAML stream for kubectl apply -f -.\n\n"
                    "Example: mokka kwok-nodes --profile h100 --count 100 | kubectl apply -f -")
@click.option("--profile", default=names.DEFAULT_PROFILE, show_default=True,
              help="A built-in profile name or a profile file.")
@click.option("--count", type=click.IntRange(1, 10000), default=1, show_default=True,
              help="Nodes to print (per pool with --values).")
@click.option("--name-prefix", default="kwok-gpu", show_default=True,
              help="Nodes are named PREFIX-0, PREFIX-1, ... (PREFIX-POOL-0 with --values).")
@click.option("--gpu-count", type=click.IntRange(1, names.MAX_GPUS), default=None,
              help=f"GPUs per node (1-{names.MAX_GPUS}; default: the profile's).")
@click.option("--mig-layout", default="", help="A name of the profile's mig.layouts: every GPU "
                                                "partitioned so (default: MIG as the profile says).")
@click.option("--mig-strategy", type=click.Choice(STRATEGIES), default="none", show_default=True,
              help="How the device plugin and GFD count MIG devices (their --mig-strategy).")
@click.option("--values", "values_file", type=click.Path(dir_okay=False),
              help="The chart's values file: one pool per entry of its pools (or one from gpu:); "
                   "--profile, --gpu-count and --mig-layout are then taken from it.")
@click.option("--arch", type=click.Choice(("amd64", "arm64")), default="amd64", show_default=True,
              help="The nodes' CPU architecture (kubernetes.io/arch).")
@click.option("--cpu", default="32", show_default=True, help="Each node's cpu capacity.")
@click.option("--memory", default="256Gi", show_default=True, help="Each node's memory capacity.")
@click.option("--pods", default="110", show_default=True, help="Each node's pod capacity.")
@common_options
def command(profile: str, count: int, name_prefix: str, gpu_count: int | None, mig_layout: str,
            mig_strategy: str, values_file: str | None, arch: str, cpu: str, memory: str,
            pods: str, gates) -> None:
    from mokka.core.profile import ProfileError
    from mokka.core.yamlio import dump_all
    from mokka.fleet import fleet, pools

    try:
        if values_file:
            chosen = pools.from_values(_values(values_file), values_file)
        else:
            chosen = [pools.Pool(name="", profile=profile, gpu_count=gpu_count, mig_layout=mig_layout)]
        nodes = list(fleet.nodes(chosen, count, name_prefix, mig_strategy, arch=arch, cpu=cpu,
                                 memory=memory, pods=pods))
    except (pools.PoolError, ProfileError) as exc:
        raise CommandError(str(exc))
    sys.stdout.buffer.write(dump_all(nodes))


def _values(path: str) -> dict:
    from mokka.core import profile as profiles
    from mokka.core import yamlio

    try:
        return yamlio.safe_load(profiles.read_file(path, "values file")) or {}
    except yamlio.YAMLError as exc:
        raise CommandError(f"{path}: {profiles.yaml_problem(exc)}") from None


def main(args: list[str], prog_name: str = "kwok-nodes") -> int:
    return run_click(command, args, program(prog_name))
