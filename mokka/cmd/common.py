"""Conventions every Mokka command shares: logging and feature-gate options,
env fallbacks (the flag wins), and ``<command>: <error>`` + exit 1 on error."""

from __future__ import annotations

import functools
import sys
from typing import NoReturn

import click

from mokka.core import features, log, names


class CommandError(Exception):
    """An error a user can fix: printed as one line, exit status 1."""


class UsageError(CommandError):
    """A command line that cannot work as given: printed as one line, exit status 2."""


def die(command: str, message: str, status: int = 1) -> NoReturn:
    # One line whatever a path or value held: control characters are shown escaped.
    message = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(message))
    click.echo(f"{command}: {message}", err=True)
    sys.exit(status)


def common_options(fn):
    """--log-level, --log-format and --feature-gates with their env variables."""
    @click.option("--log-level", envvar=names.ENV_LOG_LEVEL, default="info", show_default=True,
                  help="debug, info, warn or error (warning = warn; empty = info).")
    @click.option("--log-format", envvar=names.ENV_LOG_FORMAT, default="json", show_default=True,
                  help="json or plain (empty = json).")
    @click.option("--feature-gates", envvar="MOKKA_FEATURE_GATES", default="",
                  help="Comma-separated Name=true|false pairs "
                       f"({', '.join(names.FEATURE_GATES)}; all off by default).")
    @functools.wraps(fn)
    def wrapper(*args, log_level, log_format, feature_gates, **kwargs):
        # "mokka render-cdi" -> "render-cdi": errors read "<command>: <error>".
        command = (click.get_current_context().info_name or "mokka").split()[-1]
        try:
            log.configure(log_level, log_format)
            gates = features.parse(feature_gates)
        except (log.LogConfigError, features.FeatureGateError) as exc:
            die(command, str(exc))
        try:
            return fn(*args, gates=gates, **kwargs)
        except CommandError as exc:
            die(command, str(exc), 2 if isinstance(exc, UsageError) else 1)
    return wrapper
