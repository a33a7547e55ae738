"""``mokka profiles show NAME``: the built-in profile's file byte for byte, its --help with
one example, and a name it does not know (or none) as one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_mokka

PROFILES = os.path.join(REPO, "mokka", "core", "profiles")
BUILTIN = ("a100", "h100", "b200", "gb200", "gb300", "l40s", "t4")
LISTED = "a100, h100, b200, gb200, gb300, l40s, t4"


def test_the_table_covers_every_built_in_profile():
    assert sorted(BUILTIN) == sorted(f[:-len(".yaml")] for f in os.listdir(PROFILES) if f.endswith(".yaml"))


@pytest.mark.parametrize("name", BUILTIN)
def test_show_prints_the_profile_file_byte_for_byte(name):
    done = subprocess.run([sys.executable, "-m", "mokka", "profiles", "show", name], capture_output=True,
                          env={**os.environ, "PYTHONPATH": REPO}, timeout=60)
    with open(os.path.join(PROFILES, f"{name}.yaml"), "rb") as f:
        shipped = f.read()
    assert (done.returncode, done.stderr) == (0, b""), done.stderr
    assert done.stdout == shipped


def test_help_prints_the_usage_and_one_example():
    done = run_mokka("profiles", "show", "--help")
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == "Usage: mokka profiles show NAME"
    assert [line for line in lines if line.startswith("Example: ")] == [
        "Example: mokka profiles show a100 > my-a100.yaml"]


@pytest.mark.parametrize("args, line", [
    (["nope"], f"mokka profiles show: unknown profile 'nope': the built-in profiles are {LISTED} "
               "(see 'mokka profiles show --help')"),
    ([], f"mokka profiles show: give one built-in profile name ({LISTED}) "
         "(see 'mokka profiles show --help')"),
    (["a100", "t4"], f"mokka profiles show: give one built-in profile name ({LISTED}) "
                     "(see 'mokka profiles show --help')"),
], ids=["an unknown name", "no name", "two names"])
def test_a_name_it_cannot_show_is_one_line_and_exit_2(args, line):
    done = run_mokka("profiles", "show", *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")
