"""nvidia-smi -L through the staged launcher imports none of yaml, click, protobuf or grpc."""

from __future__ import annotations

import pytest

#: What the issue bans, plus json/hashlib, which the fast loader avoids for speed.
HEAVY = ("yaml", "click", "google.protobuf", "grpc", "json", "hashlib")


def _imported(stderr: str) -> set:
    mods = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip())
    return mods


@pytest.mark.parametrize("args,exe", [(["-L"], "smi"), (["--query-gpu=index,name", "--format=csv"], "smi"),
                                      ([], "check_fabric")])
def test_fast_paths_import_nothing_heavy(staged, dev_root, args, exe):
    ov = staged("gb300")
    res = ov.run(args, str(dev_root), exe=getattr(ov, exe), PYTHONPROFILEIMPORTTIME="1")
    assert res.returncode == 0, res.stderr
    mods = _imported(res.stderr)
    assert "mokka.smi.engine" in mods, "importtime did not report (is -X importtime honoured?)"
    heavy = {m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)}
    assert heavy == set()


def test_positive_control_topology_does_import_yaml(staged, dev_root, tmp_path):
    doc = tmp_path / "t.yaml"
    doc.write_text("version: 1\ndomains: []\n")
    ov = staged("gb300")
    res = ov.run(["-L"], str(dev_root), PYTHONPROFILEIMPORTTIME="1", NODE_NAME="n", MOCK_TOPOLOGY_CONFIG=str(doc))
    assert "yaml" in _imported(res.stderr)
