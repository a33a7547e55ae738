"""nvidia-smi -L through the staged launcher imports none of yaml, click, protobuf or grpc:
it loads ctypes and the mock library, and asks NVML."""

from __future__ import annotations

import pytest

from tests.corpus.engine_cases import write_overrides

#: Start-up costs nvidia-smi never needs: parsers (the library reads the compiled
#: companions), the CLI and RPC stacks, hashing.
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
    assert "mokka.engine.nvml" in mods, "importtime did not report (is -X importtime honoured?)"
    heavy = {m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)}
    assert heavy == set()


def test_positive_control_ctl_status_reads_an_overrides_scope_file(fresh, dev_root):
    ov = fresh("gb300")
    write_overrides(str(ov.config_dir), {1: "thermal: {temperature_gpu_c: 50}\n"})
    res = ov.run(["status"], str(dev_root), exe=str(ov.bin / "nvml-mock-ctl"), PYTHONPROFILEIMPORTTIME="1")
    assert res.returncode == 0, res.stderr
    assert "yaml" in _imported(res.stderr)
