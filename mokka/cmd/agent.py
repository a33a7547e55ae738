"""``mokka node-agent``: stage the mock GPU node and keep it converged."""

from __future__ import annotations

import os

import click

from mokka.cmd.common import CommandError, common_options
from mokka.core import names

ENV = "MOKKA_AGENT_"


@click.command(help="Stage the mock GPU node from a profile and keep it converged; "
                    "SIGTERM/SIGINT tear it down again.")
@click.option("--profile", envvar="MOKKA_PROFILE", default=names.DEFAULT_PROFILE, show_default=True,
              help="Built-in profile name (fixed) or profile file path (watched). Env MOKKA_PROFILE.")
@click.option("--topology", envvar=ENV + "TOPOLOGY", default=None,
              help="ComputeDomain topology document (watched; absent = none). Env MOKKA_AGENT_TOPOLOGY.")
@click.option("--node-name", envvar="NODE_NAME", default="", help="This node's name. Env NODE_NAME.")
@click.option("--host-root", envvar=ENV + "HOST_ROOT", default="/", show_default=True,
              help="Prefix of every host path. Env MOKKA_AGENT_HOST_ROOT.")
@click.option("--overlay-host-path", envvar=ENV + "OVERLAY_HOST_PATH",
              default=names.OVERLAY_HOST_PATH, show_default=True,
              help="Staging root on the host. Env MOKKA_AGENT_OVERLAY_HOST_PATH.")
@click.option("--health-addr", envvar=ENV + "HEALTH_ADDR", default=names.AGENT_HEALTH_ADDR,
              show_default=True, help="/healthz /readyz /stagedz address; empty disables. "
                                      "Env MOKKA_AGENT_HEALTH_ADDR.")
@click.option("--staging-lock-path", envvar=ENV + "STAGING_LOCK_PATH",
              default=names.STAGING_LOCK_PATH, show_default=True,
              help="Lock held exclusively while staging (under --host-root). "
                   "Env MOKKA_AGENT_STAGING_LOCK_PATH.")
@click.option("--resync-interval", envvar=ENV + "RESYNC_INTERVAL", type=float, default=60.0,
              show_default=True, help="Seconds between re-reads without events; 0 disables. "
                                      "Env MOKKA_AGENT_RESYNC_INTERVAL.")
@click.option("--shutdown-timeout", envvar=ENV + "SHUTDOWN_TIMEOUT", type=float, default=30.0,
              show_default=True, help="Seconds teardown may take. Env MOKKA_AGENT_SHUTDOWN_TIMEOUT.")
@click.option("--imex-channels", envvar=ENV + "IMEX_CHANNELS", type=click.IntRange(min=0), default=0,
              help=f"Stage N IMEX channels (0: {names.IMEX_CHANNEL_COUNT} on fabric profiles only). "
                   "Env MOKKA_AGENT_IMEX_CHANNELS.")
@click.option("--cdi-spec-dir", envvar=ENV + "CDI_SPEC_DIR", default=names.CDI_SPEC_DIR,
              show_default=True, help="CDI spec directory (under --host-root). "
                                      "Env MOKKA_AGENT_CDI_SPEC_DIR.")
@click.option("--nvidia-smi", envvar=ENV + "NVIDIA_SMI", default=None, metavar="PATH",
              help="NVIDIA's own nvidia-smi binary to stage in the overlay (it loads the mock "
                   "NVML library); without it the Python nvidia-smi is staged. "
                   "Env MOKKA_AGENT_NVIDIA_SMI.")
@click.option("--once", is_flag=True, envvar=ENV + "ONCE",
              help="Stage and Apply once, leave the node staged, exit. Env MOKKA_AGENT_ONCE.")
@click.option("--teardown", is_flag=True, envvar=ENV + "TEARDOWN",
              help="Remove what an earlier run staged, exit. Env MOKKA_AGENT_TEARDOWN.")
@common_options
def command(once: bool, teardown: bool, health_addr: str, gates, **kwargs) -> None:
    from mokka.agent.build import AgentConfig, build_agent, root_lock
    from mokka.agent import runner
    from mokka.agent.native import NativeError
    from mokka.agent.rootlock import RootLockHeld

    if once and teardown:
        raise CommandError("--once and --teardown exclude each other")
    # Absolute: mount points are compared with /proc/self/mountinfo, which has no relative paths.
    kwargs["host_root"] = os.path.abspath(kwargs["host_root"] or "/")
    cfg = AgentConfig(health_addr=health_addr, **kwargs)
    held = root_lock(cfg)
    try:
        held.acquire()              # before anything else: a second agent changes nothing
    except RootLockHeld as exc:
        raise CommandError(str(exc))
    except OSError as exc:
        raise CommandError(f"cannot start: {held.path}: {exc.strerror or exc}")
    try:
        agent = build_agent(cfg, held=held)
    except OSError as exc:
        held.undo()
        raise CommandError(f"cannot start: {exc}")
    except NativeError as exc:
        held.undo()
        raise CommandError(str(exc))
    if teardown:
        code = runner.teardown(agent, cfg.shutdown_timeout)
    elif once:
        code = runner.once(agent)
    else:
        code = runner.serve(agent, cfg.health_addr, cfg.shutdown_timeout)
    if isinstance(code, str):
        raise CommandError(code)


def main(args: list[str], prog_name: str = "node-agent") -> int:
    return command.main(args=args, prog_name=f"mokka {prog_name}", standalone_mode=True)
