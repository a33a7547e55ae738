"""``mokka profiles``: the built-in GPU profiles at a glance.

It prints the catalog (mokka/core/profiles/catalog.json) and loads nothing else: no
click, no YAML, no profile compiled, no logging (it logs nothing), and argparse only
when there are flags to parse, so a listing starts as fast as ``mokka --help``. The
options are the common ones of every Mokka command, with the same variables (the flag
wins) and the same one-line errors.
"""

from __future__ import annotations

import os
import sys

from mokka.core import names

PROG = "profiles"
DESCRIPTION = "List the built-in GPU profiles: GPU name, count, memory and driver."
OUTPUTS = ("table", "json")
#: option destination -> its environment variable.
ENV = {"output": "MOKKA_OUTPUT", "log_level": names.ENV_LOG_LEVEL, "log_format": names.ENV_LOG_FORMAT,
       "feature_gates": "MOKKA_FEATURE_GATES"}
DEFAULTS = {"output": "table", "log_level": "info", "log_format": "json", "feature_gates": ""}
SHOW = "show"
SHOW_HELP = ("Usage: mokka profiles show NAME\n\n"
             "Print built-in profile NAME's YAML as shipped: the file node-agent --profile NAME\n"
             "stages, MIG layouts (mig.layouts, for node-agent --mig-layout) included.\n\n"
             "Example: mokka profiles show a100 > my-a100.yaml\n")


def parser(prog: str, defaults: dict = DEFAULTS):
    from mokka.cmd.common import argument_parser

    ap = argument_parser(prog, DESCRIPTION, example_line="mokka profiles --output json",
                         epilog=f"'{prog} {SHOW} NAME' prints a profile's YAML "
                                f"(example: {prog} {SHOW} a100).")
    ap.add_argument("-o", "--output", choices=OUTPUTS, default=defaults["output"],
                    help=f"table or json (default: table). Env {ENV['output']}.")
    ap.add_argument("--log-level", default=defaults["log_level"],
                    help=f"debug, info, warn or error (warning = warn; empty = info). "
                         f"Env {ENV['log_level']}.")
    ap.add_argument("--log-format", default=defaults["log_format"],
                    help=f"json or plain (empty = json). Env {ENV['log_format']}.")
    ap.add_argument("--feature-gates", default=defaults["feature_gates"],
                    help="Comma-separated Name=true|false pairs "
                         f"({', '.join(names.FEATURE_GATES)}; all off by default). "
                         f"Env {ENV['feature_gates']}.")
    return ap


def settings(args: list[str], prog: str, environ=os.environ) -> dict:
    """Each option from its variable, else its default; the flags win."""
    values = {dest: environ.get(var, DEFAULTS[dest]) for dest, var in ENV.items()}
    values["output"] = values["output"] or DEFAULTS["output"]
    if args:
        values.update(vars(parser(prog, values).parse_args(args)))
    return values


def table(rows: list[dict]) -> str:
    header = ("PROFILE", "GPU", "COUNT", "MEMORY", "DRIVER")
    cells = [header] + [(r["name"] + (" (default)" if r["name"] == names.DEFAULT_PROFILE else ""),
                         r["gpu"], str(r["count"]), f"{r['memory_mib']} MiB", r["driver"]) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


class Fail(Exception):
    """One line for the user, exit status 1."""


def run(args: list[str], prog: str) -> int:
    from mokka.core import features, logopts
    from mokka.core.profiles import read_catalog

    from mokka.cmd.common import program

    opts = settings(args, program(prog))
    if opts["output"] not in OUTPUTS:       # from the variable: argparse checks only the flag
        raise Fail(f"invalid {ENV['output']} {opts['output']!r}: use table or json")
    try:
        logopts.parse_level(opts["log_level"])
        logopts.parse_format(opts["log_format"])
        features.parse(opts["feature_gates"])
    except (logopts.LogConfigError, features.FeatureGateError) as exc:
        raise Fail(str(exc))
    try:
        rows = read_catalog()
    except (OSError, ValueError) as exc:    # a broken package, not a user error; still one line
        raise Fail(f"cannot read the profile catalog: {exc}")
    if opts["output"] == "json":
        import json
        print(json.dumps([{**r, "default": r["name"] == names.DEFAULT_PROFILE} for r in rows], indent=2))
    else:
        print(table(rows))
    return 0


class Usage(Exception):
    """A command line that asks for nothing this command has: one line, exit status 2."""


def show(args: list[str]) -> int:
    """``profiles show NAME``: the built-in profile's file, byte for byte."""
    if args in (["-h"], ["--help"]):
        sys.stdout.write(SHOW_HELP)
        return 0
    listed = ", ".join(names.BUILTIN_PROFILES)
    if len(args) != 1 or args[0].startswith("-"):
        raise Usage(f"give one built-in profile name ({listed})")
    from mokka.core.profiles import builtin_text
    text = builtin_text(args[0])
    if text is None:
        raise Usage(f"unknown profile {args[0]!r}: the built-in profiles are {listed}")
    sys.stdout.buffer.write(text)
    sys.stdout.flush()
    return 0


def main(args: list[str], prog_name: str = PROG) -> int:
    try:
        if args[:1] == [SHOW]:
            return show(args[1:])
        return run(args, prog_name)
    except Usage as exc:
        from mokka.cmd.common import program, usage_error
        return usage_error(f"{program(prog_name)} {SHOW}", str(exc))
    except Fail as exc:
        print(f"{prog_name}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:             # the reader left (``| head``): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no error at exit
        return 0
