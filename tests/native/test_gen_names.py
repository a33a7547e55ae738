"""native/gen_names.py: the names header, and a flag is never taken for its directory."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO

GEN = os.path.join(REPO, "native", "gen_names.py")


def test_a_flag_is_a_usage_line_and_nothing_is_written(tmp_path):
    done = subprocess.run([sys.executable, GEN, "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "usage: python3 native/gen_names.py [OUT_DIR] (writes OUT_DIR/mokka_names.h)\n"
    assert os.listdir(tmp_path) == []


def test_a_directory_gets_the_header(tmp_path):
    done = subprocess.run([sys.executable, GEN, str(tmp_path / "gen")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert '#define MOKKA_NVML_LIB_FILE "libnvidia-ml.so.1"' in (tmp_path / "gen" / "mokka_names.h").read_text()
