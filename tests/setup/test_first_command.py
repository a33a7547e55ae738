"""The README's first command, copied as written, on a bare base system: from a copy of the
checkout, in a clean environment (``env -i``: an empty HOME, a PATH of bash, coreutils,
grep, sed and the ``python3`` under test), with Debian's own /usr/bin/python3 (PEP 668:
it refuses ``pip install`` into itself) and with the Python running these tests. It builds
dist/mokka, stages gb300 under a scratch root and prints NVIDIA's table; the root is torn
down again.

It needs PyPI: the venv it makes installs shiv, ziglang and the NVML header, and shiv
installs Mokka's pinned dependencies. The native libraries of the checkout's build/native
are reused when present (native/build.py checks their inputs and skips the build), and the
two runs share one HOME, so the second finds pip's cache warm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.setup import readme

DEBIAN_PYTHON = "/usr/bin/python3"
#: The base system's commands the line may use (and shivfile, and the staged launchers).
BASE_PACKAGES = ("coreutils", "grep", "sed")
BASE_COMMANDS = ("bash", "sh")
TIMEOUT_S = 1800


def base_bin(dest: str, python: str) -> str:
    """A directory holding only the base system's commands and ``python3``."""
    os.makedirs(dest)
    paths = []
    for package in BASE_PACKAGES:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True)
        paths += [p for p in listed.stdout.split() if "/bin/" in p and os.path.isfile(p)]
    paths += [shutil.which(c) for c in BASE_COMMANDS]
    for path in paths:
        link = os.path.join(dest, os.path.basename(path))
        if not os.path.lexists(link):
            os.symlink(os.path.realpath(path), link)
    os.symlink(python, os.path.join(dest, "python3"))
    return dest


def checkout_copy(dest: str) -> str:
    """The checkout's tracked files as they are now (what a clone of this tree holds),
    and its build/native (a cache native/build.py verifies)."""
    listed = subprocess.run(["git", "-C", readme.REPO, "ls-files", "-z"], capture_output=True,
                            check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = os.path.join(readme.REPO, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel), follow_symlinks=False)
    native = os.path.join(readme.REPO, "build", "native")
    if os.path.isdir(native):
        shutil.copytree(native, os.path.join(dest, "build", "native"), symlinks=True)
    return dest


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("empty-home"))


@pytest.mark.parametrize("python", [DEBIAN_PYTHON, sys.executable],
                         ids=["Debian's python3 (PEP 668)", "the python running the tests"])
def test_the_first_command_as_written_on_a_bare_base_system(tmp_path, home, python):
    assert os.path.isfile(python), f"{python} is missing (Debian: apt-get install python3 python3-venv)"
    clone = checkout_copy(str(tmp_path / "mokka"))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {"HOME": home, "PATH": base_bin(str(tmp_path / "bin"), python), "TMPDIR": str(scratch)}
    done = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "bash", "-c",
                           readme.first_command()],
                          cwd=clone, capture_output=True, text=True, timeout=TIMEOUT_S)
    roots = [d for d in os.listdir(scratch) if os.path.isdir(scratch / d / "var" / "lib" / "nvml-mock")]
    try:
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        assert "NVIDIA-SMI" in done.stdout and done.stdout.count("NVIDIA GB300") == 8, done.stdout
    finally:
        for root in roots:                      # the scratch root the line made with mktemp
            torn = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()),
                                   os.path.join(clone, "dist", "mokka"), "node-agent", "--teardown",
                                   "--host-root", str(scratch / root)],
                                  capture_output=True, text=True, timeout=120)
            assert torn.returncode == 0, torn.stderr
            assert os.listdir(scratch / root) == []
