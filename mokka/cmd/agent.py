"""``mokka node-agent``: stage the mock GPU node and keep it converged."""

from __future__ import annotations

import os

import click

from mokka.cmd import printconfig
from mokka.cmd.common import CommandError, UsageError, common_options, example, program, run_click
from mokka.core import names

ENV = "MOKKA_AGENT_"


@click.command(help="Stage the mock GPU node from a profile and keep it converged; "
                    "SIGTERM/SIGINT tear it down again.",
               epilog=example("mokka node-agent --profile t4 --host-root /tmp/node --once"))
@click.option("--profile", envvar="MOKKA_PROFILE", default=names.DEFAULT_PROFILE, show_default=True,
              help="Built-in profile name (fixed) or profile file path (watched). Env MOKKA_PROFILE.")
@click.option("--topology", envvar=ENV + "TOPOLOGY", default=None,
              help="ComputeDomain topology document (watched; absent = none). Env MOKKA_AGENT_TOPOLOGY.")
@click.option("--node-name", envvar="NODE_NAME", default="",
              help="This node's name (empty: the host name). Env NODE_NAME.")
@click.option("--host-root", envvar=ENV + "HOST_ROOT", default="/", show_default=True,
              help="Prefix of every host path. Env MOKKA_AGENT_HOST_ROOT.")
@click.option("--overlay-host-path", envvar=ENV + "OVERLAY_HOST_PATH",
              default=names.OVERLAY_HOST_PATH, show_default=True,
              help="Staging root on the host. Env MOKKA_AGENT_OVERLAY_HOST_PATH.")
@click.option("--runtime-host-root", envvar=ENV + "RUNTIME_HOST_ROOT", default=None, metavar="PATH",
              help="Where the container runtime finds the host root: the CDI specs' host paths and "
                   "the proc hook's path are rooted there (the chart: /, while the agent's own "
                   "view is --host-root /host). Default: --host-root. "
                   "Env MOKKA_AGENT_RUNTIME_HOST_ROOT.")
@click.option("--health-addr", envvar=ENV + "HEALTH_ADDR", default=names.AGENT_HEALTH_ADDR,
              show_default=True, help="/healthz /readyz /stagedz /metrics address; empty disables. "
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
@click.option("--mig-layout", envvar=ENV + "MIG_LAYOUT", default="", metavar="NAME",
              help="Boot every GPU with MIG on and this layout of the profile's mig.layouts "
                   "(e.g. all-balanced; empty: the profile's own MIG settings). "
                   "Env MOKKA_AGENT_MIG_LAYOUT.")
@click.option("--cdi-spec-dir", envvar=ENV + "CDI_SPEC_DIR", default=names.CDI_SPEC_DIR,
              show_default=True, help="CDI spec directory (under --host-root). "
                                      "Env MOKKA_AGENT_CDI_SPEC_DIR.")
@click.option("--nvidia-smi", envvar=ENV + "NVIDIA_SMI", default=None, metavar="PATH",
              help="NVIDIA's own nvidia-smi binary to stage in the overlay (it loads the mock "
                   "NVML library); without it the Python nvidia-smi is staged. "
                   "Env MOKKA_AGENT_NVIDIA_SMI.")
@click.option("--container-runtime", envvar=ENV + "CONTAINER_RUNTIME",
              type=click.Choice(names.CONTAINER_RUNTIMES), default=names.CONTAINER_RUNTIME_CONTAINERD,
              show_default=True, help="Set up the node's container runtime for the CDI specs and "
                                      "the NRI plugin (containerd), or leave it alone (none). "
                                      "Env MOKKA_AGENT_CONTAINER_RUNTIME.")
@click.option("--restart-mode", envvar=ENV + "RESTART_MODE", type=click.Choice(names.RESTART_MODES),
              default=names.RESTART_MODE_SYSTEMD, show_default=True,
              help="Restart containerd through the host's systemd when its configuration changed "
                   "and once at start (systemd), or only log that a restart is pending (none). "
                   "Env MOKKA_AGENT_RESTART_MODE.")
@click.option("--containerd-config", envvar=ENV + "CONTAINERD_CONFIG", default=names.CONTAINERD_CONFIG,
              show_default=True, help="containerd's main configuration, which gets an import of "
                                      "--containerd-config-dir (under --host-root). "
                                      "Env MOKKA_AGENT_CONTAINERD_CONFIG.")
@click.option("--containerd-config-dir", envvar=ENV + "CONTAINERD_CONFIG_DIR",
              default=names.CONTAINERD_CONFIG_DIR, show_default=True,
              help=f"Where Mokka's {names.CONTAINERD_DROP_IN_FILE} goes (under --host-root). "
                   "Env MOKKA_AGENT_CONTAINERD_CONFIG_DIR.")
@click.option("--nri-socket-path", envvar=ENV + "NRI_SOCKET_PATH", default=names.NRI_SOCKET_PATH,
              show_default=True, help="The NRI plugin's socket, where containerd's NRI is turned on; "
                                      "empty leaves NRI as the host has it. "
                                      "Env MOKKA_AGENT_NRI_SOCKET_PATH.")
@click.option("--fabricmanager/--no-fabricmanager", envvar=ENV + "FABRICMANAGER", default=True,
              show_default=True,
              help="Run the fabricmanager stand-in. Without it GPUs with fabric state auto read "
                   "IN_PROGRESS for good, as on a node whose Fabric Manager is not installed; "
                   "/readyz does not wait for it. Env MOKKA_AGENT_FABRICMANAGER.")
@click.option("--fabricmanager-delay", envvar=ENV + "FABRICMANAGER_DELAY", type=click.FloatRange(min=0),
              default=0.0, show_default=True,
              help="Seconds the fabricmanager daemon takes before GPUs with fabric state auto read "
                   "COMPLETED. Env MOKKA_AGENT_FABRICMANAGER_DELAY.")
@click.option("--fabricmanager-fail", is_flag=True, envvar=ENV + "FABRICMANAGER_FAIL",
              help="The fabricmanager daemon never comes up (it exits; restarted with backoff; "
                   "/readyz names it). Env MOKKA_AGENT_FABRICMANAGER_FAIL.")
@click.option("--kmsg-path", envvar=ENV + "KMSG_PATH", default=names.KMSG_PATH, show_default=True,
              help="Kernel log the kernellog daemon announces injected Xids on (under --host-root; "
                   "appended to, never created). Env MOKKA_AGENT_KMSG_PATH.")
@click.option("--ib-tools", envvar=ENV + "IB_TOOLS", default=None, metavar="ROOT",
              help="A root holding Debian's infiniband-diags and ibverbs-utils (the image: /): "
                   "their tools are staged in the overlay with their libraries. "
                   "Env MOKKA_AGENT_IB_TOOLS.")
@click.option("--ib-relay-listen", envvar=ENV + "IB_RELAY_LISTEN", default="", metavar="ADDR:PORT",
              help="mock-ib's fabric relay address on 127.0.0.0/8 (empty: no relay). "
                   "Env MOKKA_AGENT_IB_RELAY_LISTEN.")
@click.option("--ib-relay-peers", envvar=names.ENV_IB_PEERS, default="", metavar="ADDR:PORT,...",
              help=f"Peer nodes' relays, comma-separated. Env {names.ENV_IB_PEERS}.")
@click.option("--allow-real-driver", is_flag=True, envvar=ENV + "ALLOW_REAL_DRIVER",
              help="Stage even where --host-root shows a real NVIDIA driver (proc/driver/nvidia/"
                   "version or sys/module/nvidia): only where that driver belongs to another "
                   "machine, as on a kind node of a GPU workstation. Env MOKKA_AGENT_ALLOW_REAL_DRIVER.")
@click.option("--once", is_flag=True, envvar=ENV + "ONCE",
              help="Stage and Apply once, leave the node staged, exit. Env MOKKA_AGENT_ONCE.")
@click.option("--teardown", is_flag=True, envvar=ENV + "TEARDOWN",
              help="Remove what an earlier run staged, exit. Env MOKKA_AGENT_TEARDOWN.")
@printconfig.option(ENV + "PRINT_CONFIG")
@common_options
def command(once: bool, teardown: bool, print_config: bool, health_addr: str, gates,
            **kwargs) -> None:
    from mokka.agent.build import build_agent, load_native, root_lock
    from mokka.agent import runner
    from mokka.agent.native import NativeError
    from mokka.agent.rootlock import RootLockHeld

    cfg = agent_config(once, teardown, health_addr, kwargs)
    if print_config:
        try:
            load_native(cfg)            # the node-provided binaries, read as a start reads them
        except NativeError as exc:
            raise CommandError(str(exc))
        printconfig.emit("node-agent", effective(cfg, once, teardown), gates)
        return
    if not teardown and not cfg.allow_real_driver:
        from mokka.agent import realdriver
        found = realdriver.evidence(cfg.host_root)
        if found:                   # before the lock: a refusal leaves the host as found
            raise CommandError(realdriver.refusal(found))
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
        if isinstance(code, runner.TornDown):
            click.echo(code.line(cfg.host_root))
            return
    elif once:
        code = runner.once(agent)
    else:
        code = runner.serve(agent, cfg.health_addr, cfg.shutdown_timeout)
    if isinstance(code, str):
        raise CommandError(code)


def agent_config(once: bool, teardown: bool, health_addr: str, kwargs: dict):
    """Every check of the command line a start makes before touching the host;
    the AgentConfig it starts with. Raises CommandError."""
    from mokka.agent.build import AgentConfig
    from mokka.core import probes

    if once and teardown:
        raise UsageError("--once and --teardown exclude each other")
    try:
        probes.parse_addr(health_addr)
    except ValueError as exc:
        raise CommandError(str(exc))
    if kwargs["ib_relay_listen"] or kwargs["ib_relay_peers"]:
        from mokka.ib.relay import parse_addr
        try:
            for addr in [kwargs["ib_relay_listen"]] + kwargs["ib_relay_peers"].split(","):
                if addr.strip():
                    parse_addr(addr)
        except ValueError as exc:
            raise CommandError(str(exc))
    kwargs["ib_relay_peers"] = tuple(p.strip() for p in kwargs["ib_relay_peers"].split(",")
                                     if p.strip())
    if kwargs["mig_layout"]:
        check_mig_layout(kwargs["profile"], kwargs["mig_layout"])
    # Absolute: mount points are compared with /proc/self/mountinfo, which has no relative paths.
    kwargs["host_root"] = os.path.abspath(kwargs["host_root"] or "/")
    if kwargs["runtime_host_root"] is not None:
        kwargs["runtime_host_root"] = os.path.abspath(kwargs["runtime_host_root"] or "/")
    return AgentConfig(health_addr=health_addr, **kwargs)


def check_mig_layout(profile: str, layout: str) -> None:
    """A built-in profile cannot change while the agent runs, so a layout it lacks is a
    usage error before anything starts (a watched file may gain it: the agent reports it)."""
    from mokka.agent.desired import mig_layout_problem
    from mokka.core import profile as prof

    name = profile or names.DEFAULT_PROFILE
    if prof.is_path(name) or name not in names.BUILTIN_PROFILES:
        return
    problem = mig_layout_problem(prof.load(name).doc, layout)
    if problem:
        raise UsageError(f"profile {name}: {problem}")


def effective(cfg, once: bool, teardown: bool) -> dict:
    """The configuration as JSON values, with the host paths it resolves to."""
    from mokka.agent.build import node_name, root_lock, runtime_overlay
    from mokka.core.overlay import host_overlay, under
    return {"mode": "teardown" if teardown else "once" if once else "serve", **printconfig.plain(cfg),
            "resolved": {"node_name": node_name(cfg),
                         "overlay": host_overlay(cfg.host_root, cfg.overlay_host_path).root,
                         "runtime_overlay": runtime_overlay(cfg).root,
                         "staging_lock": under(cfg.host_root, cfg.staging_lock_path),
                         "root_lock": root_lock(cfg).path,
                         "cdi_spec_dir": under(cfg.host_root, cfg.cdi_spec_dir),
                         "kmsg": under(cfg.host_root, cfg.kmsg_path)}}


def main(args: list[str], prog_name: str = "node-agent") -> int:
    return run_click(command, args, program(prog_name))
