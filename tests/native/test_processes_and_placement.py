"""Processes the state lists, and placement: the GPU set of a CPU, the GPUs near one."""

from __future__ import annotations

from tests.corpus import engine_cases as corpus
from tests.native.conftest import run_probe

PROCESSES = {0: """processes:
  - {pid: 4242, name: python3 train.py, used_memory_mib: 1024, type: C}
  - {pid: 4343, name: Xorg, used_memory_mib: 16, type: G}
  - {pid: 0, name: phantom, used_memory_mib: 1}
"""}


def test_processes_and_placement(nvml_lib, tmp_path):
    env = corpus.stage(corpus.Case("extra", "h100", (), overrides=PROCESSES), str(tmp_path))
    seen, stderr = run_probe(nvml_lib, env, "extra")
    assert stderr == ""
    assert seen == {
        "compute": [[4242, 1024 * 1024 * 1024, 0xFFFFFFFF]],
        "compute v1": [[4242, 1024 * 1024 * 1024]],
        "graphics": [4343],
        "mps": [],
        "name 4242": "python3 train.py",
        "name 1": ["err", 6],
        # h100: GPUs 0-3 on pci0000:00 (NUMA 0, CPUs 0-55), 4-7 on pci0000:80 (NUMA 1, CPUs 56-111)
        "gpu set cpu 0": [0, 1, 2, 3],
        "gpu set cpu 60": [4, 5, 6, 7],
        "near 0 hostbridge": [1, 2, 3],
        "near 0 node": [1, 2, 3],
        "near 0 system": [1, 2, 3, 4, 5, 6, 7],
        "memory affinity 5": [2],
    }
