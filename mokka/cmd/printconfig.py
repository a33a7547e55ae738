"""``--print-config``: the effective configuration of a command as one JSON object.

A command validates its flags and environment exactly as it would to start,
then hands the result here instead of starting: nothing on the host is
touched (no staging, no socket, no lock). The chart's tests run every command
line it renders through this.
"""

from __future__ import annotations

import dataclasses
import json

import click

from mokka.core import names


def option(envvar: str):
    return click.option("--print-config", "print_config", is_flag=True, envvar=envvar,
                        help="Validate every flag and environment variable as a start would, "
                             "print the effective configuration as JSON, exit 0; start nothing. "
                             f"Env {envvar}.")


def plain(value):
    """Dataclasses, sets and tuples as JSON values (sets sorted, so output is stable)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (frozenset, set)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def common(gates: dict[str, bool]) -> dict:
    """What every command shares: logging and the feature gates (defaults filled in)."""
    from mokka.core import log
    params = click.get_current_context().params
    return {"log_level": log.parse_level(params.get("log_level")).lower(),
            "log_format": log.parse_format(params.get("log_format")),
            "feature_gates": {**names.FEATURE_GATES, **gates}}


def emit(command: str, config: dict, gates: dict[str, bool]) -> None:
    out = {"command": command, **plain(config), **common(gates)}
    click.echo(json.dumps(out, indent=2, sort_keys=True))
