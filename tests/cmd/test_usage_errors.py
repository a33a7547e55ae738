"""Every command answers a command line it cannot run with one line on stderr naming the
command, the problem and where help is, and exit status 2, whichever parser it uses; and
every --help ends with one example. The table is the dispatcher's own list of commands,
so a new command is held to this as soon as it is listed."""

from __future__ import annotations

import pytest

from mokka.cmd.main import COMMANDS
from tests.conftest import run_mokka

#: nvidia-smi answers in NVIDIA's own formats (tests/smi).
OWN_FORMATS = {"nvidia-smi"}
LISTED = sorted(set(COMMANDS) - OWN_FORMATS)


def test_the_table_covers_the_commands_this_issue_names():
    assert set(LISTED) >= {"node-agent", "nri-plugin", "render-cdi", "profiles", "compile", "check-fabric",
                           "mock-ib", "fabricmanager", "ctl", "profile", "exec"}


def usage_failure(*args: str) -> str:
    done = run_mokka(*args)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


@pytest.mark.parametrize("command", LISTED)
def test_an_unknown_option_is_one_line_and_exit_2(command):
    assert usage_failure(command, "--bogus") == (
        f"mokka {command}: no such option: --bogus (see 'mokka {command} --help')\n")


@pytest.mark.parametrize("command", LISTED)
def test_help_has_one_example_line(command):
    done = run_mokka(command, "--help")
    assert done.returncode == 0, done.stderr
    examples = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("Example: ")]
    assert len(examples) == 1, done.stdout
    assert examples[0].split()[1:3] in (["mokka", command], ["sudo", "mokka"], ["nvidia-smi", "-q"],
                                        ["eval", '"$(mokka']), examples[0]


@pytest.mark.parametrize("args, line", [
    (["compile", "--profle", "t4"],
     "mokka compile: no such option: --profle, did you mean --profile? (see 'mokka compile --help')"),
    (["profiles", "--outptu", "json"],
     "mokka profiles: no such option: --outptu, did you mean --output? (see 'mokka profiles --help')"),
    (["compile", "extra"], "mokka compile: unexpected argument 'extra' (see 'mokka compile --help')"),
    (["check-fabric", "extra"],
     "mokka check-fabric: unexpected argument 'extra' (see 'mokka check-fabric --help')"),
    (["ctl", "set", "0", "temperature=80", "--bogus"],
     "mokka ctl set: no such option: --bogus (see 'mokka ctl set --help')"),
    (["ctl"], "mokka ctl: missing VERB (see 'mokka ctl --help')"),
    (["ctl", "set"], "mokka ctl set: missing GPU, KEY=VALUE (see 'mokka ctl set --help')"),
    (["profiles", "-o", "xml"], "mokka profiles: argument -o/--output: invalid choice: 'xml' "
                                "(choose from 'table', 'json') (see 'mokka profiles --help')"),
    (["fabricmanager", "--delay", "soon"], "mokka fabricmanager: invalid value for '--delay': 'soon' "
                                           "is not a valid float range (see 'mokka fabricmanager --help')"),
    (["profile"], "mokka profile: missing COMMAND (one of: capture) (see 'mokka profile --help')"),
    (["profile", "capture", "--bogus"],
     "mokka profile capture: no such option: --bogus (see 'mokka profile capture --help')"),
    (["exec"], "mokka exec: missing COMMAND (the command to run, after --) (see 'mokka exec --help')"),
    (["node-agent", "--once", "--teardown"],
     "mokka node-agent: --once and --teardown exclude each other (see 'mokka node-agent --help')"),
], ids=["a mistyped option names the nearest (click)", "a mistyped option names the nearest (argparse)",
        "an extra argument (click)", "an extra argument (by hand)", "a verb's unknown option names the verb",
        "a missing verb", "a verb's missing arguments", "a value not among the choices (argparse)",
        "a value of the wrong type (click)", "a group without its command", "a subcommand's unknown option",
        "exec without a command", "flags that exclude each other"])
def test_each_kind_of_usage_error_is_one_line(args, line):
    assert usage_failure(*args) == line + "\n"


def test_a_correct_command_line_is_no_usage_error():
    done = run_mokka("profiles", "-ojson")
    assert done.returncode == 0 and done.stderr == "" and '"name": "t4"' in done.stdout
