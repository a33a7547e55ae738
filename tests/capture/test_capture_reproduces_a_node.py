"""A real node's capture, staged: ``mokka profile capture`` of each real capture, then
``node-agent --once`` with the profile, then ``nvidia-smi -q -x`` over the mock, ours
and NVIDIA's 550, against the capture, leaf by leaf (tests/capture/reports.py).

Every leaf that still differs is printed, and must be one the note in docs/users/profiles.md
explains (KNOWN_DIFFERENCES here, by element).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.capture.reports import capture_files, compared, leaves, older_words, tag
from tests.native.staged import clean_env, nvml_build, ok, staged_node  # noqa: F401 (fixtures)

#: What our report cannot say of a capture, by element, and why (docs/users/profiles.md: "What it keeps nowhere").
KNOWN_DIFFERENCES = {
    "power_smoothing": "the capturing user's NVML permissions (Insufficient Permissions), not the board's",
}

CAPTURES = capture_files()


@pytest.fixture(scope="module")
def profiles(tmp_path_factory) -> dict:
    """Each capture as the profile ``mokka profile capture`` wrote (a real process)."""
    out = {}
    folder = tmp_path_factory.mktemp("captured")
    for path in CAPTURES:
        target = str(folder / (os.path.basename(path)[:-4] + ".yaml"))
        done = subprocess.run([sys.executable, "-m", "mokka", "profile", "capture", path, "--out", target],
                              capture_output=True, text=True, env=clean_env(), timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""
        out[path] = target
    return out


def _report(result: subprocess.CompletedProcess) -> dict:
    return leaves(ok(result))


def _differences(capture: dict, ours: dict, shared_only: bool) -> tuple[list, int]:
    """(differing capture leaves, how many were compared)."""
    keys = [k for k in compared(capture) if not shared_only or k in ours]
    return [k for k in keys if ours.get(k) != capture[k]], len(keys)


def _show(name: str, diff: list, capture: dict, ours: dict, total: int) -> str:
    lines = [f"{name}: {total - len(diff)}/{total} leaves equal ({100 * (total - len(diff)) / total:.2f} %)"]
    lines += [f"  {k}: capture {capture[k]!r}, mock {ours.get(k, '<absent>')!r}" for k in diff]
    return "\n".join(lines)


def _assert_reproduced(label: str, capture: dict, report: dict, shared_only: bool, leaves_over: int) -> None:
    """At least 99 % of the capture's leaves (those the report prints, if ``shared_only``)
    equal in the report, every other one known; all of them printed."""
    diff, total = _differences(capture, report, shared_only)
    shown = _show(label, diff, capture, report, total)
    print(shown)
    assert total > leaves_over, shown
    assert (total - len(diff)) / total >= 0.99, shown
    assert {tag(k) for k in diff} <= set(KNOWN_DIFFERENCES), shown


@pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
@pytest.mark.parametrize("path", CAPTURES, ids=[os.path.basename(p) for p in CAPTURES])
def test_our_nvidia_smi_reproduces_99_percent_of_the_capture(path, profiles, staged_node):
    with open(path) as f:
        capture = leaves(f.read())
    node = staged_node(profiles[path])
    ours = _report(node.run_python(["-q", "-x"]))
    _assert_reproduced(f"ours over {os.path.basename(path)}", capture, ours, shared_only=False, leaves_over=200)


@pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
@pytest.mark.parametrize("path", CAPTURES, ids=[os.path.basename(p) for p in CAPTURES])
def test_nvidia_smi_550_prints_99_percent_of_what_it_shares_with_the_capture(path, profiles, staged_node):
    with open(path) as f:
        capture = leaves(f.read())
    node = staged_node(profiles[path])
    theirs = _report(node.run(["-q", "-x"]))
    older = older_words(capture, theirs)
    shared = {k: v for k, v in theirs.items() if k not in older}
    print(f"{len(older)} leaves 550 words its own way: " + ", ".join(sorted({tag(k) for k in older})))
    _assert_reproduced(f"NVIDIA's 550 over {os.path.basename(path)}", capture, shared, shared_only=True,
                       leaves_over=150)
