"""The README's ``mokka exec`` example, copied as written and run from the checkout: it stages
a t4 node under a scratch root, reads the first GPU's PCI class, the nvidia module's version
and nvidia-smi's list through ``mokka exec``, and tears the node down again."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.setup import readme

SECTION = "## Go programs and `/sys`: the node's PCI tree and modules, and `mokka exec`"


def test_the_readme_exec_example_prints_what_it_promises(native_libs, tmp_path):
    (block,) = readme.sh_blocks(SECTION)
    env = {**os.environ, "TMPDIR": str(tmp_path),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    result = subprocess.run(["bash", "-c", block], cwd=readme.REPO, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[:2] == ["0x030200", "550.163.01"], result.stdout
    gpus = [line for line in lines if line.startswith("GPU ")]
    assert len(gpus) == 4 and all("NVIDIA T4" in line for line in gpus), result.stdout
    # The example's scratch root, torn down: nothing staged is left in it.
    (root,) = os.listdir(tmp_path)
    leftovers = [os.path.join(d, f) for d, _, files in os.walk(tmp_path / root) for f in files]
    assert leftovers == []
