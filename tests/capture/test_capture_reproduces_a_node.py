"""A real node's capture, staged: ``mokka profile capture`` of each real capture, then
``node-agent --once`` with the profile, then ``nvidia-smi -q -x`` over the mock, ours
and NVIDIA's 550, against the capture, leaf by leaf (tests/capture/reports.py).

Every leaf that still differs is printed, and must be one the note in the README
explains (KNOWN_DIFFERENCES here, by element).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.capture.reports import capture_files, compared, leaves, tag
from tests.native.staged import clean_env, nvml_build, ok, staged_node  # noqa: F401 (fixtures)

#: What our report cannot say of a capture, by element, and why (README: "What a capture keeps").
KNOWN_DIFFERENCES = {
    "power_smoothing": "the capturing user's NVML permissions (Insufficient Permissions), not the board's",
}
#: Where NVIDIA's nvidia-smi 550 prints its own words, being older than the capture's driver:
#: no name for Blackwell, and the display mode where 580 on prints NVML's deprecation.
PRE_580_WORDS = {
    "product_architecture": lambda capture, ours: ours == "Unknown",
    "display_mode": lambda capture, ours: capture == "Requested functionality has been deprecated",
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


@pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
@pytest.mark.parametrize("path", CAPTURES, ids=[os.path.basename(p) for p in CAPTURES])
def test_our_nvidia_smi_reproduces_99_percent_of_the_capture(path, profiles, staged_node):
    with open(path) as f:
        capture = leaves(f.read())
    node = staged_node(profiles[path])
    ours = _report(node.run_python(["-q", "-x"]))
    diff, total = _differences(capture, ours, shared_only=False)
    print(_show(f"ours over {os.path.basename(path)}", diff, capture, ours, total))
    assert total > 200
    assert (total - len(diff)) / total >= 0.99, _show("ours", diff, capture, ours, total)
    assert {tag(k) for k in diff} <= set(KNOWN_DIFFERENCES), _show("ours", diff, capture, ours, total)


@pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
@pytest.mark.parametrize("path", CAPTURES, ids=[os.path.basename(p) for p in CAPTURES])
def test_nvidia_smi_550_prints_99_percent_of_what_it_shares_with_the_capture(path, profiles, staged_node):
    with open(path) as f:
        capture = leaves(f.read())
    node = staged_node(profiles[path])
    theirs = _report(node.run(["-q", "-x"]))
    older = [k for k in capture if k in theirs and tag(k) in PRE_580_WORDS
             and PRE_580_WORDS[tag(k)](capture[k], theirs[k]) and theirs[k] != capture[k]]
    shared = {k: v for k, v in theirs.items() if k not in older}
    diff, total = _differences(capture, shared, shared_only=True)
    print(_show(f"NVIDIA's 550 over {os.path.basename(path)}", diff, capture, theirs, total))
    print(f"  and {len(older)} leaves 550 words its own way: " + ", ".join(sorted({tag(k) for k in older})))
    assert total > 150
    assert (total - len(diff)) / total >= 0.99, _show("550", diff, capture, theirs, total)
    assert {tag(k) for k in diff} <= set(KNOWN_DIFFERENCES), _show("550", diff, capture, theirs, total)
