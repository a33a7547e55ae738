"""Conventions every Mokka command shares, whichever way it parses its arguments.

- A usage error (an unknown option, a missing or extra argument, a bad value for
  a flag) is one line on stderr and exit status 2:
  ``mokka compile: no such option: --bogus (see 'mokka compile --help')``.
- Any other error a user can fix is one line, ``<command>: <error>``, exit status 1.
- Every --help ends with one ``Example:`` line.

Three parsers meet these through this module: click commands run through
``run_click``, argparse commands build their parser with ``argument_parser``,
and a command that reads its few arguments by hand reports through
``usage_error``. Nothing here imports click or argparse at import time: ctl and
check-fabric run on a container's own python3, which has neither click nor time
to spare.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import NoReturn

from mokka.core import names

#: Exit status of a usage error, as click, argparse and the shells use it.
USAGE_STATUS = 2
ERROR_STATUS = 1


class CommandError(Exception):
    """An error a user can fix: printed as one line, exit status 1."""


class UsageError(Exception):
    """A command line that cannot run as given: one usage line, exit status 2.
    For checks a parser cannot make itself (two flags that exclude each other)."""


def one_line(message: object) -> str:
    """``message`` on one line whatever a path or value held: control characters escaped."""
    # A newline in a path is shown escaped, not folded into a space: the path stays exact.
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(message).strip())


def program(command: str, argv0: str | None = None) -> str:
    """What the user typed to run ``command``: a link's own name (``check-fabric``
    in a container), else ``mokka COMMAND``."""
    from mokka.cmd.main import ALIASES, COMMANDS, PROGRAM

    invoked = os.path.basename(sys.argv[0] if argv0 is None and sys.argv else argv0 or "")
    if ALIASES.get(invoked, invoked) == command and (invoked in COMMANDS or invoked in ALIASES):
        return invoked
    return f"{PROGRAM} {command}"


def usage_line(prog: str, message: str) -> str:
    return f"{prog}: {one_line(message)} (see '{prog} --help')"


def usage_error(prog: str, message: str) -> int:
    """Print the usage line for ``prog`` (e.g. ``mokka ctl set``); the status to exit with."""
    print(usage_line(prog, message), file=sys.stderr)
    return USAGE_STATUS


def unexpected(arg: str, options=()) -> str:
    """The message for an argument nobody takes: an unknown option names the nearest
    known one."""
    if arg.startswith("-") and arg != "-":
        import difflib

        name = arg.split("=", 1)[0]
        bare = {o.lstrip("-"): o for o in options}
        near = difflib.get_close_matches(name.lstrip("-"), sorted(bare), n=1, cutoff=0.75)
        return f"no such option: {name}" + (f", did you mean {bare[near[0]]}?" if near else "")
    return f"unexpected argument {arg!r}"


def example(command_line: str) -> str:
    """The one example a command's --help ends with."""
    return f"Example: {command_line}"


def die(command: str, message: str) -> NoReturn:
    print(f"{command}: {one_line(message)}", file=sys.stderr)
    sys.exit(ERROR_STATUS)


# --- argparse ----------------------------------------------------------------

def argument_parser(prog: str, description: str, example_line: str | None = None, **kwargs):
    """An argparse parser whose errors are one usage line and exit 2 (its subparsers too).
    Abbreviated options are refused, as click refuses them."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args, allow_abbrev: bool = False, **kw):    # subparsers come here too
            super().__init__(*args, allow_abbrev=allow_abbrev, **kw)

        def parse_known_args(self, args=None, namespace=None):
            # An unknown option is reported before a missing argument, as click does, and by
            # the parser it was given to (``mokka ctl set``), not by the top one.
            args = sys.argv[1:] if args is None else list(args)
            for arg in args:
                if arg == "--" or not arg.startswith("-") or arg == "-" or (
                        self._negative_number_matcher.match(arg) and not self._has_negative_number_optionals):
                    break                              # the first argument (-1 is one, as argparse takes it)
                name = arg[:2] if arg[1] != "-" else arg.split("=", 1)[0]
                if name not in self._option_string_actions:
                    self.error(f"unrecognized arguments: {arg}")
            known, extra = super().parse_known_args(args, namespace)
            if extra:
                self.error(f"unrecognized arguments: {' '.join(extra)}")
            return known, extra

        def error(self, message: str) -> NoReturn:
            sys.exit(usage_error(self.prog, _argparse_message(message, self._option_string_actions)))

    if example_line is not None:
        kwargs["epilog"] = "\n".join(filter(None, [kwargs.get("epilog"), example(example_line)]))
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    return Parser(prog=prog, description=description, **kwargs)


def _argparse_message(message: str, options) -> str:
    unrecognized = "unrecognized arguments: "
    if message.startswith(unrecognized):
        return unexpected(message[len(unrecognized):].split()[0], options)
    message = message.replace("the following arguments are required: ", "missing ")
    return message


# --- click -------------------------------------------------------------------

def run_click(command, args: list[str], prog: str) -> int:
    """Run a click command (or group) as ``prog`` ("mokka compile"): its status, with
    usage errors as one line and exit 2, CommandError as one line and exit 1."""
    import click

    try:
        rv = command.main(args=list(args), prog_name=prog, standalone_mode=False)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else prog
        return usage_error(where, _click_message(exc))
    except click.ClickException as exc:          # e.g. a file click could not open
        print(f"{prog.split()[-1]}: {one_line(exc.format_message())}", file=sys.stderr)
        return exc.exit_code
    except click.Abort:                          # Ctrl-C at a prompt
        print(f"{prog.split()[-1]}: aborted", file=sys.stderr)
        return ERROR_STATUS
    except SystemExit as exc:                    # die(): its line is out already
        return exc.code if isinstance(exc.code, int) else ERROR_STATUS
    except BrokenPipeError:                      # the reader left (``| head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no error at exit
        return ERROR_STATUS
    return rv if isinstance(rv, int) else 0


def _click_message(exc) -> str:
    import click

    if isinstance(exc, click.exceptions.NoSuchOption):
        known = [o for p in (exc.ctx.command.params if exc.ctx else ()) for o in p.opts + p.secondary_opts]
        return unexpected(exc.option_name, known + ["--help"])
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        sub = sorted(getattr(exc.ctx.command, "commands", {})) if exc.ctx else []
        return "missing COMMAND" + (f" (one of: {', '.join(sub)})" if sub else "")
    message = exc.format_message().rstrip(".")
    extra = re.fullmatch(r"Got unexpected extra arguments? \((\S+).*\)", message)
    if extra:
        return unexpected(extra.group(1))
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]
    return message


def common_options(fn):
    """--log-level, --log-format and --feature-gates with their env variables; a
    UsageError or CommandError raised by the command becomes its one line."""
    import click

    from mokka.core import features, log

    @click.option("--log-level", envvar=names.ENV_LOG_LEVEL, default="info", show_default=True,
                  help="debug, info, warn or error (warning = warn; empty = info).")
    @click.option("--log-format", envvar=names.ENV_LOG_FORMAT, default="json", show_default=True,
                  help="json or plain (empty = json).")
    @click.option("--feature-gates", envvar="MOKKA_FEATURE_GATES", default="",
                  help="Comma-separated Name=true|false pairs "
                       f"({', '.join(names.FEATURE_GATES)}; all off by default).")
    @functools.wraps(fn)
    def wrapper(*args, log_level, log_format, feature_gates, **kwargs):
        ctx = click.get_current_context()
        # "mokka render-cdi" -> "render-cdi": errors read "<command>: <error>".
        command = (ctx.info_name or "mokka").split()[-1]
        try:
            log.configure(log_level, log_format)
            gates = features.parse(feature_gates)
        except (log.LogConfigError, features.FeatureGateError) as exc:
            die(command, str(exc))
        from mokka.engine.migplace import EngineMissing

        try:
            return fn(*args, gates=gates, **kwargs)
        except UsageError as exc:
            raise click.UsageError(str(exc), ctx) from None
        except (CommandError, EngineMissing) as exc:    # EngineMissing: a source tree not built
            die(command, str(exc))
    return wrapper
