"""``mokka fabricmanager``: the nv-fabricmanager stand-in (mokka/shims/fabricmanager.py)."""

from __future__ import annotations

import signal

import click

from mokka.cmd.common import CommandError, common_options, example, program, run_click
from mokka.core import names
from mokka.core.overlay import host_overlay

SIGNALS = {signal.SIGTERM, signal.SIGINT}


def signal_wait(seconds: float) -> bool:
    """Sleep up to ``seconds``; True as soon as SIGTERM or SIGINT arrives (blocked, so never lost)."""
    return signal.sigtimedwait(SIGNALS, max(seconds, 0.0)) is not None


@click.command(help="Stand in for nv-fabricmanager: after --delay, write fabricmanager.ready in "
                    "--state-dir and re-assert it; SIGTERM removes it. GPUs whose fabric state is "
                    "auto read IN_PROGRESS until it exists, COMPLETED after.",
               epilog=example("mokka fabricmanager --state-dir /tmp/fabric --delay 5"))
@click.option("--state-dir", envvar=names.ENV_FABRICMANAGER_STATE_DIR,
              default=host_overlay().fabric_state, show_default=True,
              help=f"Where the marker goes. Env {names.ENV_FABRICMANAGER_STATE_DIR}.")
@click.option("--delay", envvar=names.ENV_FABRICMANAGER_DELAY, type=click.FloatRange(min=0),
              default=0.0, show_default=True,
              help=f"Seconds before the fabric is ready. Env {names.ENV_FABRICMANAGER_DELAY}.")
@click.option("--fail", is_flag=True, envvar=names.ENV_FABRICMANAGER_FAIL,
              help="Never become ready: exit 1 after --delay without writing the marker. "
                   f"Env {names.ENV_FABRICMANAGER_FAIL}.")
@click.option("--interval", envvar=names.ENV_FABRICMANAGER_INTERVAL, type=click.FloatRange(min=0.05),
              default=names.FABRICMANAGER_REASSERT_S, show_default=True,
              help=f"Seconds between re-assertions of the marker. Env {names.ENV_FABRICMANAGER_INTERVAL}.")
@common_options
def command(state_dir: str, delay: float, fail: bool, interval: float, gates) -> None:
    from mokka.core import log as mlog
    from mokka.shims import fabricmanager as fm

    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    cfg = fm.Config(state_dir=state_dir, delay=delay, fail=fail, interval=interval)
    try:
        fm.run(cfg, signal_wait, mlog.get("mokka.fabricmanager"))
    except fm.FabricManagerFailed as exc:
        raise CommandError(str(exc))
    except OSError as exc:
        raise CommandError(f"cannot manage the marker in {state_dir}: {exc.strerror}; "
                           "pass a writable --state-dir")


def main(args: list[str], prog_name: str = "fabricmanager") -> int:
    return run_click(command, args, program(prog_name))
