"""A report of the v12 layout (drivers 535 to 550): NVIDIA's nvidia-smi 550's own
``-q -x`` over a staged node of each built-in profile, captured from stdin, compiles
back to the profile on every field both hold."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mokka.core import names
from tests.capture.test_capture_from_nvml import differences
from tests.native.staged import nvml_build, ok, staged_node  # noqa: F401 (fixtures)


@pytest.mark.parametrize("name", names.BUILTIN_PROFILES)
def test_nvidia_smi_550s_report_captures_back_to_the_profile(name, staged_node, tmp_path):
    node = staged_node(name)
    report = ok(node.run(["-q", "-x"]))
    assert '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">' in report
    out = tmp_path / "captured.yaml"
    done = subprocess.run([sys.executable, "-m", "mokka", "profile", "capture", "-", "--dynamic", "--out", str(out)],
                          input=report, capture_output=True, text=True, env=node.env(), timeout=120)
    assert done.returncode == 0, done.stderr
    diff, common = differences(name, str(out))
    assert common > 800, common
    assert diff == []


def test_dynamic_takes_the_moving_pattern_instead_of_the_static_readings(staged_node):
    node = staged_node("l40s")
    report = ok(node.run(["-q", "-x"]))
    run = lambda *a: subprocess.run([sys.executable, "-m", "mokka", "profile", "capture", "-", *a],  # noqa: E731
                                    input=report, capture_output=True, text=True, env=node.env(), timeout=120)
    static, moving = ok(run()), ok(run("--dynamic"))
    assert "dynamic_metrics" not in static and "  utilization:\n    gpu: " in static
    assert "  # the built-in l40s profile's moving readings (--dynamic)\n  dynamic_metrics:\n" in moving
    assert "  utilization:\n    encoder: 0\n" in moving            # what does not move stays
