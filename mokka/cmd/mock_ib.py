"""``mokka mock-ib``: serve the mock HCAs' management datagrams on run/mock-ib.sock.

SIGHUP re-reads the profile (clients stay connected); SIGTERM/SIGINT stop.
"""

from __future__ import annotations

import signal

import click

from mokka.cmd.common import CommandError, common_options, example, program, run_click
from mokka.core import names

ENV = "MOKKA_MOCK_IB_"
SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def load_fabric(profile: str, node_name: str):
    from mokka.core import compile as comp
    from mokka.core.profile import ProfileError, load
    from mokka.ib import fabric as fab

    try:
        return fab.from_state(comp.compile_profile(load(profile), None, node_name), node_name)
    except (ProfileError, fab.FabricError) as exc:
        raise CommandError(str(exc))


@click.command(help="Serve the mock HCAs' SMP, SA and ibping MADs to libibmockumad on the "
                    "overlay's run/mock-ib.sock; SIGHUP reloads the profile.",
               epilog=example("mokka mock-ib --profile gb200 --host-root /tmp/node"))
@click.option("--profile", envvar="MOKKA_PROFILE", default=names.DEFAULT_PROFILE, show_default=True,
              help="Built-in profile name or profile file path. Env MOKKA_PROFILE.")
@click.option("--node-name", envvar="NODE_NAME", default="", help="This node's name. Env NODE_NAME.")
@click.option("--host-root", envvar=ENV + "HOST_ROOT", default="/", show_default=True,
              help="Prefix of every host path. Env MOKKA_MOCK_IB_HOST_ROOT.")
@click.option("--overlay-host-path", envvar=ENV + "OVERLAY_HOST_PATH",
              default=names.OVERLAY_HOST_PATH, show_default=True,
              help="Staging root on the host. Env MOKKA_MOCK_IB_OVERLAY_HOST_PATH.")
@click.option("--socket", "socket_path", envvar=ENV + "SOCKET", default=None,
              help=f"Socket path (default: {names.IB_PING_SOCKET} under the overlay). "
                   "Env MOKKA_MOCK_IB_SOCKET.")
@click.option("--relay-listen", envvar=ENV + "RELAY_LISTEN", default="",
              help="ADDR:PORT of the fabric relay (loopback only; empty: no relay). "
                   "Env MOKKA_MOCK_IB_RELAY_LISTEN.")
@click.option("--relay-peers", envvar=names.ENV_IB_PEERS, default="",
              help=f"Comma-separated ADDR:PORT of peer relays. Env {names.ENV_IB_PEERS}.")
@common_options
def command(profile: str, node_name: str, host_root: str, overlay_host_path: str,
            socket_path: str | None, relay_listen: str, relay_peers: str, gates) -> None:
    from mokka.core import log as logmod
    from mokka.core.overlay import host_overlay
    from mokka.ib.daemon import MockIb

    log = logmod.get("mock-ib")
    path = socket_path or host_overlay(host_root, overlay_host_path).ib_ping_socket
    relay = _relay(relay_listen, relay_peers, log)
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)      # before any thread starts
    daemon = MockIb(path, load_fabric(profile, node_name), log, relay=relay)
    try:
        daemon.start()
    except OSError as exc:
        raise CommandError(f"cannot serve {path}: {exc}")
    while True:
        sig = signal.sigwait(SIGNALS)
        if sig != signal.SIGHUP:
            break
        try:
            daemon.reload(load_fabric(profile, node_name))
            log.info("reloaded", profile=profile)
        except CommandError as exc:
            log.error("reload rejected; serving the previous profile", error=str(exc))
    daemon.stop()


def _relay(listen: str, peers: str, log):
    if not listen:
        return None
    from mokka.ib import relay
    try:
        return relay.Relay(relay.parse_addr(listen), [relay.parse_addr(p) for p in
                                                     peers.split(",") if p.strip()], log)
    except ValueError as exc:
        raise CommandError(str(exc))


def main(args: list[str], prog_name: str = "mock-ib") -> int:
    return run_click(command, args, program(prog_name))
