"""GPUtil, nvsmi and nvidia-htop (from PyPI) run against the staged nvidia-smi on PATH."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import PROFILES
from tests.corpus.engine_cases import write_overrides

pytest.importorskip("GPUtil")
pytest.importorskip("nvsmi")
MIB = 1024 * 1024

CLIENT = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
out = {}
try:
    import GPUtil
    out["gputil"] = [[g.id, g.uuid, g.name, g.memoryTotal, g.serial] for g in GPUtil.getGPUs()]
except Exception as exc:
    out["gputil"] = "error: %s" % type(exc).__name__
try:
    import nvsmi
    out["nvsmi"] = [[int(g.id), g.uuid, g.name, g.mem_total] for g in nvsmi.get_gpus()]
except Exception as exc:
    out["nvsmi"] = "error: %s" % type(exc).__name__
print(json.dumps(out))
"""


def _clients(ov, dev_root, **env) -> dict:
    res = subprocess.run([sys.executable, "-c", CLIENT], env=ov.env(str(dev_root), **env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _want(gpus, index_from=None):
    return [[i, g["uuid"], g["name"], g["memory"]["total_bytes"] // MIB] for i, g in enumerate(gpus)]


@pytest.mark.parametrize("profile", PROFILES)
def test_gputil_and_nvsmi_see_the_profile(staged, dev_root, profile):
    ov = staged(profile)
    got = _clients(ov, dev_root)
    want = _want(ov.state["gpus"])
    assert [row[:4] for row in got["gputil"]] == want
    assert [row[4] for row in got["gputil"]] == [str(g["serial"]) for g in ov.state["gpus"]]
    assert got["nvsmi"] == want


def test_clients_follow_partial_dev_nodes_and_visible_none(staged, dev_root):
    ov = staged("gb200")
    dev_root.touch(1, 6)
    got = _clients(ov, dev_root)
    want = _want([ov.state["gpus"][1], ov.state["gpus"][6]])
    assert [row[:4] for row in got["gputil"]] == want and got["nvsmi"] == want
    got = _clients(ov, dev_root, MOCK_NVML_VISIBLE_DEVICES="none")
    assert got["nvsmi"].startswith("error")            # nvidia-smi exits 6, as with no GPUs
    assert got["gputil"] == [] or got["gputil"].startswith("error")


def htop_script() -> str | None:
    """nvidia-htop.py as installed for the test interpreter, never a PATH lookup:
    a pyenv shim of that name on PATH is a shell script, not the Python one."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / "nvidia-htop.py"
        if candidate.is_file():
            return str(candidate)
    return None


def _htop(ov, dev_root, **env):
    script = htop_script()
    if script is None:
        pytest.skip("nvidia-htop is not installed beside the test interpreter")
    return subprocess.run([sys.executable, script], env=ov.env(str(dev_root), **env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("profile", PROFILES)
def test_nvidia_htop_parses_the_table(staged, dev_root, profile):
    ov = staged(profile)
    res = _htop(ov, dev_root)
    assert res.returncode == 0, res.stderr
    for gpu in ov.state["gpus"]:
        assert gpu["pci"]["bus_id"] in res.stdout
        assert f"/ {gpu['memory']['total_bytes'] // MIB:>6}MiB" in res.stdout
    assert "No running processes found" in res.stdout


def test_nvidia_htop_lists_processes_and_follows_dev_nodes(fresh, dev_root):
    ov = fresh("a100")
    write_overrides(str(ov.config_dir),
                    {3: "processes: [{pid: 1, type: C, name: init, used_memory_mib: 512}]\n"})
    dev_root.touch(3)
    res = _htop(ov, dev_root)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("00000000:") == 1 and ov.state["gpus"][3]["pci"]["bus_id"] in res.stdout
    assert any(l.split()[:3] == ["|", "0", "1"] and "512MiB" in l for l in res.stdout.splitlines())
