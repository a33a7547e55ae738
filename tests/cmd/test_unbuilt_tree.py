"""A source tree whose native libraries were never built: commands that need the mock
library say so in one line, not a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def unbuilt(tmp_path_factory) -> str:
    """The package alone, as a checkout has it before native/build.py ran."""
    top = tmp_path_factory.mktemp("unbuilt")
    shutil.copytree(os.path.join(REPO, "mokka"), top / "mokka",
                    ignore=shutil.ignore_patterns("_native", "__pycache__"))
    return str(top)


@pytest.mark.parametrize("args", [
    ["compile", "--profile", "a100"],
    ["node-agent", "--profile", "a100", "--mig-layout", "nope"],
])
def test_a_missing_library_is_one_line(unbuilt, tmp_path, args):
    done = subprocess.run([sys.executable, "-m", "mokka", *args, "--host-root", str(tmp_path / "root")]
                          if args[0] == "node-agent" else [sys.executable, "-m", "mokka", *args],
                          cwd=unbuilt, env={**os.environ, "PYTHONPATH": unbuilt},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"{args[0]}: no mock libnvidia-ml.so.1 to place MIG instances with: "
                           "build it with 'python3 native/build.py'\n")
    assert not os.path.exists(tmp_path / "root")
