"""Every runnable command in the docs runs, page by page, as a reader would paste the page's
blocks: in order, in one ``bash -euo pipefail``, from the repository's top with ``dist/mokka``
built and ``$ROOT`` a fresh scratch directory; the node is torn down after the page, and the
scratch directory is left empty."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs import runnable

#: A page's run takes a few seconds; this is what "stuck" means.
PAGE_TIMEOUT_S = 300

#: Lines a page says its commands print, checked beside their exit status.
PROMISED_LINES = {
    "users/go-and-sys.md": ["0x030200", "550.163.01", "af:00.0 0302: 10de:1eb8",
                            "GPU 0: NVIDIA T4 (UUID: GPU-00000074-0000-0000-0000-000000000002)",
                            "0x020700", "no HCA",
                            "           +-02.0-[84-86]----00.0-[85-86]----00.0-[86]----00.0"],
    "users/nvml.md": ["8 580.65.06"],
    "users/host-tools.md": ["8 NVIDIA H100 80GB HBM3", "8 GPUs"],
    "users/kwok.md": ["  name: kwok-gpu-0", "  name: kwok-gpu-1", "    nvidia.com/mig-3g.40gb: '8'"],
    "users/ctl.md": ["1, 85, 450.00 W, 90 %", "nvidia-smi exit status 15",
                     "            DRAM Uncorrectable            : 1",
                     "GPU 0 (GPU-01000100-0000-0000-0000-000000000000): NVLink 2 crc-flit errors 5",
                     "\t Link 2: CRC Errors: 5"],
    "users/mig.md": ["|   0  MIG 1g.10gb         19       13          6:1     |",
                     "Disabled MIG Mode for GPU 00000000:1A:00.0"],
}


def test_every_runnable_mark_is_followed_by_a_sh_block():
    for page in runnable.pages():
        assert runnable.marks(page) == len(runnable.runnable_blocks(page)), (
            f"docs/{page}: a `{runnable.MARK}` line must come right before a ```sh block")


def test_the_pages_that_promise_output_have_runnable_blocks():
    assert set(PROMISED_LINES) <= set(runnable.pages_with_runnable_blocks())


@pytest.mark.parametrize("page", runnable.pages_with_runnable_blocks())
def test_the_runnable_commands_of_a_page_run_in_order(page, zipapp, tmp_path):
    checkout = runnable.checkout_view(str(tmp_path / "checkout"), zipapp)
    root = tmp_path / "root"
    scratch = tmp_path / "tmp"
    root.mkdir()
    scratch.mkdir()
    # The Python running the tests comes first on PATH: `python3` in a block is that one.
    env = {**os.environ, "ROOT": str(root), "TMPDIR": str(scratch),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    try:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", runnable.script(page)],
                              cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=PAGE_TIMEOUT_S)
        assert done.returncode == 0, (f"docs/{page}", done.stdout[-3000:], done.stderr[-3000:])
        lines = done.stdout.splitlines()
        for promised in PROMISED_LINES.get(page, []):
            assert promised in lines, (f"docs/{page}", promised, done.stdout[-3000:])
    finally:
        torn = subprocess.run([os.path.join(checkout, "dist", "mokka"), "node-agent", "--teardown",
                               "--host-root", str(root)], env=env, capture_output=True, text=True,
                              timeout=120)
        assert torn.returncode == 0, torn.stderr
    leftovers = [os.path.join(d, f) for d, _, files in os.walk(root) for f in files]
    assert leftovers == []
