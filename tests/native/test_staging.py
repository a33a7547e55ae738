"""The agent stages the mock library as a driver ships it, NVIDIA's nvidia-smi with
the RUNPATH that finds it, and takes both away again at teardown."""

from __future__ import annotations

import os
import subprocess
import sys

from mokka.core import elf
from tests.native.staged import clean_env, nvml_build  # noqa: F401 (fixture)
from tests.peers import peer


def test_once_stages_library_links_and_binary_and_teardown_removes_them(nvml_build, tmp_path):
    root = tmp_path / "host"
    root.mkdir()
    agent = [sys.executable, "-m", "mokka", "node-agent", "--host-root", str(root), "--profile", "h100",
             "--health-addr", "", "--nvidia-smi", peer("NVIDIA_SMI")]
    done = subprocess.run(agent + ["--once"], capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
    lib64 = root / "var/lib/nvml-mock/driver/usr/lib64"
    try:
        assert sorted(os.listdir(lib64)) == ["libcuda.so", "libcuda.so.1", "libcuda.so.550.163.01",
                                             "libnvidia-ml.so", "libnvidia-ml.so.1",
                                             "libnvidia-ml.so.550.163.01"]
        for library in ("libnvidia-ml", "libcuda"):
            assert os.readlink(lib64 / f"{library}.so.1") == f"{library}.so.550.163.01"
            assert os.readlink(lib64 / f"{library}.so") == f"{library}.so.1"
        with open(nvml_build, "rb") as f:
            assert (lib64 / "libnvidia-ml.so.550.163.01").read_bytes() == f.read()
        smi = (root / "var/lib/nvml-mock/driver/usr/bin/nvidia-smi").read_bytes()
        assert elf.search_path(smi) == "$ORIGIN/../lib64"
        with open(peer("NVIDIA_SMI"), "rb") as f:
            assert elf.search_path(f.read()) is None          # the node's copy is never changed
    finally:
        done = subprocess.run(agent + ["--teardown"], capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert os.listdir(root) == []


def test_a_file_that_is_not_an_elf_binary_is_one_line_and_exit_1(nvml_build, tmp_path):
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\necho fake\n")
    done = subprocess.run([sys.executable, "-m", "mokka", "node-agent", "--host-root", str(tmp_path / "h"),
                           "--health-addr", "", "--once", "--nvidia-smi", str(script)],
                          capture_output=True, text=True, env=clean_env())
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"node-agent: --nvidia-smi {script}: not an ELF file; give NVIDIA's nvidia-smi binary "
        "(Debian's package nvidia-smi, usr/lib/nvidia/current/nvidia-smi)"]
