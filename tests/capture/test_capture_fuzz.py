"""A real capture cut short, with elements taken out or values replaced: the command
either writes a profile that loads, or says what is wrong in one line and exits 1.
Never a traceback. Bounded: 200 examples of single-GPU reports (15 to 20 s here)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mokka.cmd.main import main
from mokka.core import profile
from mokka.core.capture import closest
from tests.capture.reports import capture_files

#: The single-GPU captures (a 4-GPU one costs four times as much per example).
SMALL = [path for path in capture_files() if not path.endswith("qx-gb200.xml")]
pytestmark = pytest.mark.skipif(not SMALL, reason="no shared/reference/captures beside the checkout")
#: Texts a hostile or broken report puts where nvidia-smi prints a value.
NASTY = ["", "N/A", "nan", "inf", "-inf", "1e309", "1e309 W", "-1", "-0", "+5", "0x", "0xFFFFFFFFFFFFFFFFF",
         "99999999999999999999", "9223372036854775807", "1_000", "\u0663\u0663", "\uff11 MiB", "12.x", "x" * 300,
         "Enabled", "Yes", "Unknown", "Insufficient Permissions", "a/b", "..", "\u00e9", " ", "16x", "0 %"]
#: What replaces the number of a reading, its unit kept ("inf W" for "49.68 W").
NASTY_NUMBERS = ["nan", "inf", "-inf", "1e309", "-1", "+5", "1_0", "\u0663", "\uff11", "99999999999999999999",
                 "0x", "", "4.5", "-0"]
READING = re.compile(r"(-?[0-9][0-9.]*)(.*)", re.DOTALL)


def elements(root) -> list[tuple]:
    """Every element below the root as the index path that reaches it."""
    out: list[tuple] = []

    def walk(el, path):
        for n, child in enumerate(el):
            out.append(path + (n,))
            walk(child, path + (n,))
    walk(root, ())
    return out


def find(root, path: tuple):
    parent = root
    for n in path[:-1]:
        parent = parent[n]
    return parent, parent[path[-1]]


BASES = [(path, open(path).read()) for path in SMALL]
TREES = [ET.fromstring(text) for _, text in BASES]
PATHS = [elements(tree) for tree in TREES]
#: The head's leaves and each GPU's top-level blocks (<pci>, <fb_memory_usage>, ...).
TOPS = [[p for p in paths if len(p) == 1 or (len(p) == 2 and find(tree, p[:1])[1].tag == "gpu")]
        for tree, paths in zip(TREES, PATHS)]
#: The leaves that hold a number ("49.68 W", "12.8", "0").
READINGS = [[p for p in paths if not len(find(tree, p)[1]) and READING.fullmatch((find(tree, p)[1].text or "").strip())]
            for tree, paths in zip(TREES, PATHS)]


@st.composite
def mutated(draw) -> str:
    """One of the single-GPU captures: cut short, or with 1 to 6 changes, each taking out
    an element (often a whole block), putting a nasty number into a reading, or any text
    into any element."""
    which = draw(st.integers(0, len(BASES) - 1))
    if draw(st.integers(0, 9)) == 0:
        text = BASES[which][1]
        return text[:draw(st.integers(0, len(text) - 1))]
    root = ET.fromstring(BASES[which][1])
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["delete block", "delete block", "delete", "reading", "reading", "reading",
                                     "text"]))
        paths = {"delete block": TOPS, "reading": READINGS}.get(kind, PATHS)[which]
        try:
            parent, element = find(root, draw(st.sampled_from(paths)))
        except IndexError:                       # taken out by an earlier change
            continue
        if kind.startswith("delete"):
            parent.remove(element)
        elif kind == "reading" and READING.fullmatch((element.text or "").strip()):
            unit = READING.fullmatch(element.text.strip()).group(2)
            element.text = draw(st.sampled_from(NASTY_NUMBERS)) + unit
        else:
            element.text = draw(st.sampled_from(NASTY) | st.text(max_size=24))
    return ET.tostring(root, encoding="unicode")


def capture(report: str, out: str) -> tuple[int, str, str]:
    """``mokka profile capture REPORT --out OUT`` through the same dispatch as ``python -m
    mokka``, in this process: an exception escaping it is the traceback a user would see."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(["mokka", "profile", "capture", report, "--out", out])
        except SystemExit as exc:
            code = exc.code
    return code, stdout.getvalue(), stderr.getvalue()


def test_a_mutated_capture_is_a_profile_that_loads_or_one_line():
    builtins = closest._builtins()                # the same for every example: read them once
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(closest, "_builtins", lambda: builtins):
        report, out = os.path.join(tmp, "node.xml"), os.path.join(tmp, "node.yaml")

        @settings(max_examples=200, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(mutated())
        def check(text):
            with open(report, "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(text)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out)
            code, stdout, stderr = capture(report, out)
            assert stdout == ""
            if code == 0:
                assert stderr == ""
                profile.load(out)                 # raises ProfileError if Mokka would refuse it
            else:
                assert code == 1, (code, stderr)
                assert re.fullmatch(rf"capture: {re.escape(report)}: [^\n]+\n", stderr), stderr
                assert not os.path.exists(out)
        check()
