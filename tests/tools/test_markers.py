"""The markers a contributor selects tests by (tests/README.md) follow the folder and the
file name: `pytest -m "not slow"` leaves out the sanitizer reruns, fuzz runs, image and
containerd tests, and keeps the unit tests."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

from tests.conftest import REPO, markers_of


def test_folders_and_suffixes_give_the_markers():
    assert markers_of(os.path.join("core", "test_cdi.py"), ()) == set()
    assert markers_of(os.path.join("nri", "test_codec_fuzz.py"), ()) == {"slow"}
    assert markers_of(os.path.join("native", "test_sanitized.py"), ()) == {"slow", "process"}
    assert markers_of(os.path.join("native", "test_fields.py"), ()) == {"process"}
    assert markers_of(os.path.join("smi", "test_ctl_process.py"), ()) == {"process"}
    # The docs' runnable commands stage nodes with dist/mokka.
    assert markers_of(os.path.join("docs", "test_runnable.py"), ()) == {"process"}
    assert markers_of(os.path.join("integration", "test_nri_plugin.py"), ()) == {"runtime", "slow", "process"}
    # A test elsewhere that asks for the real containerd is a runtime test too.
    assert markers_of(os.path.join("cuda", "test_c_program.py"), ("tmp_path", "runtime")) == {
        "runtime", "slow", "process"}


def test_not_slow_selects_the_unit_tests_and_leaves_the_sanitizer_rerun_out():
    files = ["tests/native/test_sanitized.py", "tests/core/test_flatstate.py", "tests/agent/test_lifecycle.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", "not slow", *files], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    chosen = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    assert chosen == {"tests/core/test_flatstate.py"}


def test_the_commands_of_tests_readme_select_tests():
    """Each pytest command tests/README.md gives, collected only (running them is the suite)."""
    with open(os.path.join(REPO, "tests", "README.md")) as f:
        blocks = re.findall(r"```sh\n(.*?)\n```", f.read(), re.S)
    commands = [b for b in blocks if b.startswith("python3 -m pytest")]
    assert len(commands) == 2
    for command in commands:
        argv = [sys.executable if w == "python3" else w for w in shlex.split(command)]
        done = subprocess.run([*argv, "--collect-only", "-p", "no:cacheprovider"], capture_output=True,
                              text=True, cwd=REPO, timeout=300)
        assert done.returncode == 0, command + "\n" + done.stdout[-2000:] + done.stderr[-2000:]
        assert re.search(r"\d+/\d+ tests collected \(\d+ deselected\)", done.stdout), done.stdout[-500:]
