from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import helpers  # noqa: E402


@pytest.fixture
def scratch(tmp_path):
    """(host root, a directory outside it for profiles and logs)."""
    root = tmp_path / "host"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    # A host that already has things the agent must leave alone.
    (root / "etc").mkdir()
    (root / "etc" / "hostname").write_text("node-1\n")
    (root / "var" / "run" / "cdi").mkdir(parents=True)
    (root / "var" / "run" / "cdi" / "other-vendor.yaml").write_text("cdiVersion: 0.6.0\n")
    procs = []
    yield str(root), str(outside), procs
    for p in procs:
        p.kill()
    if (root / "var" / "lib" / "nvml-mock").exists():
        helpers.run_agent(str(root), "--teardown")
    helpers.unmount_under(str(root))
