"""Bounded reading: special files, oversized files, alias bombs and deep nesting are refused
with one line, exit 1, no traceback, in every command that reads a profile; memory stays low."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from mokka.core import names
from tests.conftest import REPO, run_mokka
from tests.core.test_profile_errors import BOMB, HOSTILE_CASES, NESTED

LIMIT_MIB = names.MAX_DOCUMENT_BYTES // (1024 * 1024)


def special_path(tmp_path, kind: str) -> str:
    if kind == "/dev/zero":
        return "/dev/zero"
    if kind == "fifo":
        path = str(tmp_path / "fifo.yaml")
        os.mkfifo(path)
        return path
    if kind == "directory":
        path = str(tmp_path / "dir.yaml")
        os.mkdir(path)
        return path
    if kind == "oversized":
        path = str(tmp_path / "big.yaml")
        with open(path, "wb") as f:
            f.truncate(names.MAX_DOCUMENT_BYTES + 1)
        return path
    if kind == "symlink to /dev/zero":
        path = str(tmp_path / "zero.yaml")
        os.symlink("/dev/zero", path)
        return path
    if kind == "newline in the path":
        return str(tmp_path / "no\nsuch.yaml")
    raise AssertionError(kind)


# (kind, words in the one line)
SPECIAL = [
    ("/dev/zero", "it is a character device, not a regular file"),
    ("fifo", "it is a FIFO, not a regular file"),
    ("directory", "it is a directory, not a regular file"),
    ("oversized", f"over the limit of {names.MAX_DOCUMENT_BYTES} bytes; pass a regular file of "
                  f"at most {LIMIT_MIB} MiB"),
    ("symlink to /dev/zero", "it is a character device"),
    ("newline in the path", "no\\nsuch.yaml: cannot read the profile: No such file or directory"),
]


def command_args(command: str, profile: str, root: str) -> list[str]:
    if command == "node-agent":
        return ["node-agent", "--once", "--host-root", root, "--health-addr", "",
                "--log-format", "plain", "--profile", profile]
    return [command, "--profile", profile]


def assert_one_line_error(result, command: str, words: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    last = lines[-1]
    if command != "node-agent":
        assert lines == [last]
    else:                                 # the agent's log records come first, one line each
        assert all(re.match(r"\d\d:\d\d:\d\d (info|warn|error) ", line) for line in lines[:-1]), lines
    assert last.startswith(f"{command}: ")
    assert words in last


@pytest.mark.parametrize("command", ["compile", "render-cdi", "node-agent"])
@pytest.mark.parametrize("kind,words", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_files_are_refused_without_blocking(tmp_path, command, kind, words):
    root = tmp_path / "root"
    root.mkdir()
    path = special_path(tmp_path, kind)
    result = subprocess.run([sys.executable, "-m", "mokka", *command_args(command, path, str(root))],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert_one_line_error(result, command, words)
    if command == "node-agent":
        assert sorted(os.listdir(root)) == []         # refused before staging anything


@pytest.mark.parametrize("text,field,words", [c[1:] for c in HOSTILE_CASES],
                         ids=[c[0] for c in HOSTILE_CASES])
def test_issue_cases_through_compile(tmp_path, text, field, words):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    result = run_mokka("compile", "--profile", str(path))
    assert_one_line_error(result, "compile", words)
    assert result.stderr.startswith(f"compile: {path}: " + (f"{field}: " if field else ""))


SOME = ["switch entry is a string", "alias inside the node it names", "10 000 nested mappings",
        "alias bomb of nine levels of ten", "root complex id with a trailing newline"]


@pytest.mark.parametrize("command", ["render-cdi", "node-agent"])
@pytest.mark.parametrize("case", SOME)
def test_issue_cases_through_render_cdi_and_the_agent(tmp_path, command, case):
    _, text, field, words = next(c for c in HOSTILE_CASES if c[0] == case)
    root = tmp_path / "root"
    root.mkdir()
    path = tmp_path / "p.yaml"
    path.write_text(text)
    result = subprocess.run([sys.executable, "-m", "mokka", *command_args(command, str(path), str(root))],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert_one_line_error(result, command, words)
    assert f"{path}: " + (f"{field}: " if field else "") in result.stderr


PEAK = """
import sys
from mokka.core.profile import ProfileError, load
try:
    load(sys.argv[1])
except ProfileError as exc:
    print(str(exc))
with open("/proc/self/status") as f:
    print(next(l for l in f if l.startswith("VmHWM:")).split()[1])
"""
#: Peak RSS, KiB, of refusing any of these; the interpreter, yaml and mokka need about 30 MiB.
CEILING_KIB = 150 * 1024


@pytest.mark.parametrize("name", ["alias bomb", "nested", "4 MiB of scalars"])
def test_refusing_a_hostile_profile_stays_under_a_memory_ceiling(tmp_path, name):
    path = tmp_path / "p.yaml"
    if name == "alias bomb":
        path.write_text(BOMB)
    elif name == "nested":
        path.write_text(NESTED)
    else:
        line = b"- 1234567\n"
        path.write_bytes(b"x:\n" + line * ((names.MAX_DOCUMENT_BYTES - 3) // len(line)))
    result = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    message, peak = result.stdout.strip().splitlines()
    assert message.startswith(f"{path}: ")
    assert int(peak) < CEILING_KIB, f"peak RSS {peak} KiB"


TOPOLOGIES = [
    ("nodes is a number", "domains: [{cliques: [{nodes: 5}]}]\n", "nodes: must be a list"),
    ("a node is a list", "domains: [{cliques: [{nodes: [[1]]}]}]\n", "[1] is not a node name"),
    ("a node name with a newline", 'domains: [{cliques: [{nodes: ["a\\nb"]}]}]\n',
     "'a\\nb' is not a node name"),
    ("domain name is a list", "domains: [{name: [1]}]\n", "domains[0].name: must be a plain string"),
    ("an alias bomb", "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join(["*a" if i == 1 else f"*a{i - 1}"] * 10) + "]\n"
        for i in range(1, 10)), "nodes with aliases expanded"),
    ("a FIFO", None, "it is a FIFO, not a regular file"),
]


@pytest.mark.parametrize("text,words", [t[1:] for t in TOPOLOGIES], ids=[t[0] for t in TOPOLOGIES])
def test_hostile_topology_documents_are_one_line(tmp_path, text, words):
    path = tmp_path / "topology.yaml"
    if text is None:
        os.mkfifo(path)
    else:
        path.write_text("version: 1\n" + text)
    result = run_mokka("compile", "--profile", "t4", "--topology", str(path), "--node-name", "a")
    assert_one_line_error(result, "compile", words)
    assert str(path) in result.stderr
