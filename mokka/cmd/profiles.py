"""``mokka profiles``: the built-in GPU profiles at a glance."""

from __future__ import annotations

import click

from mokka.cmd.common import CommandError, common_options
from mokka.core import names


def describe(name: str) -> dict:
    from mokka.core import profile as prof

    p = prof.load(name)
    first = p.devices[0] if p.devices else {}
    total = (first.get("memory") or {}).get("total_bytes") or 0
    return {"name": name, "gpu": first.get("name", ""), "count": p.count,
            "memory_mib": total // (1024 * 1024),
            "driver": str((p.doc.get("system") or {}).get("driver_version", "")),
            "default": name == names.DEFAULT_PROFILE}


@click.command(help="List the built-in GPU profiles: GPU name, count, memory and driver.")
@click.option("--output", "-o", envvar="MOKKA_OUTPUT", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@common_options
def command(output: str, gates) -> None:
    from mokka.core.profile import ProfileError

    try:
        rows = [describe(n) for n in names.BUILTIN_PROFILES]
    except ProfileError as exc:  # a broken package, not a user error; still one line
        raise CommandError(str(exc))
    if output == "json":
        import json
        click.echo(json.dumps(rows, indent=2))
        return
    header = ("PROFILE", "GPU", "COUNT", "MEMORY", "DRIVER")
    table = [header] + [(r["name"] + (" (default)" if r["default"] else ""), r["gpu"],
                         str(r["count"]), f"{r['memory_mib']} MiB", r["driver"]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def main(args: list[str], prog_name: str = "profiles") -> int:
    return command.main(args=args, prog_name=f"mokka {prog_name}", standalone_mode=True)
