"""The staged shims under the container's own python3, whatever its version.

Workload images bring their own interpreter. Every CPython this machine has
(pyenv keeps several) runs the staged launcher; one too old gets the launcher's
one-line message, and none leaves bytecode in the read-only-in-containers tree.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from mokka.core import launcher

def _versions_dir() -> str:
    """pyenv's versions folder, found from this interpreter (HOME may be elsewhere)."""
    here = os.path.realpath(sys.executable)
    while os.path.dirname(here) != here:
        here = os.path.dirname(here)
        if os.path.basename(here) == "versions":
            return here
    return os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "versions")


INTERPRETERS = sorted(glob.glob(os.path.join(_versions_dir(), "3.*", "bin", "python3")))


def version_of(python: str) -> tuple[int, int]:
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


def path_with(python: str, tmp_path) -> str:
    """A PATH whose python3 is ``python`` (and a shell for the launcher)."""
    bin_dir = tmp_path / f"py-{os.path.basename(os.path.dirname(os.path.dirname(python)))}"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(python)
    return f"{bin_dir}:/usr/bin:/bin"


def pyc_files(root) -> set[str]:
    return {p for p in glob.glob(os.path.join(str(root), "**", "*.pyc"), recursive=True)}


@pytest.mark.skipif(not INTERPRETERS, reason="no other CPython versions on this machine")
@pytest.mark.parametrize("python", INTERPRETERS, ids=lambda p: p.split(os.sep)[-3])
def test_staged_nvidia_smi_under_each_python(python, fresh, dev_root, tmp_path):
    ov = fresh("gb200")
    before = pyc_files(ov.root)
    env_path = path_with(python, tmp_path)
    listing = ov.run(["-L"], str(dev_root), PATH=env_path)
    check = ov.run([], str(dev_root), exe=ov.check_fabric, PATH=env_path)
    if version_of(python) < launcher.MIN_PYTHON:
        for result, name in ((listing, "nvidia-smi"), (check, "check-fabric")):
            assert result.returncode == 127
            assert result.stderr.startswith(f"{name}: this mock needs python3 ")
            assert result.stderr.count("\n") == 1
        return
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines() == [
        f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})" for g in ov.state["gpus"]]
    assert check.returncode == 0 and check.stdout.startswith("Discovered 8 GPU(s)")
    xml = ov.run(["-q", "-x"], str(dev_root), PATH=env_path)
    assert xml.returncode == 0 and "<nvidia_smi_log>" in xml.stdout
    assert pyc_files(ov.root) == before            # nothing written into the staged tree
