"""Overrides (merge and -r), the default table, topo -m, nvlink -s and error exits."""

from __future__ import annotations

import hashlib
import os

import pytest

from conftest import PROFILES
from tests.corpus.engine_cases import write_overrides


def test_overrides_merge_and_reset_drops_one_gpus_document(fresh, dev_root):
    ov = fresh("h100")
    write_overrides(str(ov.config_dir), {None: "thermal: {temperature_gpu_c: 50}\n",
                                         2: "thermal: {temperature_gpu_c: 77}\n",
                                         3: "utilization: {gpu: 99}\n"})
    q = ["--query-gpu=temperature.gpu,utilization.gpu", "--format=csv,noheader,nounits"]
    rows = ov.run(q, str(dev_root)).stdout.splitlines()
    # utilization moves (the pinned second: GPU 0 17 %, GPU 2 40 %) unless overridden
    assert rows[0] == "50, 17" and rows[2] == "77, 40" and rows[3] == "50, 99"
    res = ov.run(["-r", "-i", "2"], str(dev_root))
    assert res.returncode == 0 and "was successfully reset" in res.stdout
    assert sorted(os.listdir(ov.overrides_dir)) == ["all.nvml", "all.yaml", "gpu3.nvml", "gpu3.yaml"]
    companion = (ov.overrides_dir / "gpu3.nvml").read_text().splitlines()
    assert companion[:2] == ["# mokka-nvml overrides 2",
                             "digest sha256:" + hashlib.sha256(b"utilization: {gpu: 99}\n").hexdigest()]
    assert companion[3:] == ["utilization.gpu 99"]
    rows = ov.run(q, str(dev_root)).stdout.splitlines()
    assert rows[2] == "50, 40" and rows[3] == "50, 99"


@pytest.mark.parametrize("profile", PROFILES)
def test_default_table_layout(staged, dev_root, profile):
    ov = staged(profile)
    res = ov.run([], str(dev_root))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    drv = ov.state["system"]["driver_version"]
    assert lines[2].startswith(f"| NVIDIA-SMI {drv}") and f"Driver Version: {drv}" in lines[2]
    assert {len(l) for l in lines[1:] if l} == {91}
    for gpu in ov.state["gpus"]:
        assert any(gpu["pci"]["bus_id"] in l for l in lines)
    assert "|  No running processes found" in res.stdout


@pytest.mark.parametrize("profile,nv", [("a100", "NV12"), ("h100", "NV18"), ("gb200", "NV18"),
                                        ("gb300", "NV18"), ("b200", None), ("l40s", None), ("t4", None)])
def test_topo_matrix(staged, dev_root, profile, nv):
    res = staged(profile).run(["topo", "-m"], str(dev_root))
    assert res.returncode == 0
    head, row0 = res.stdout.splitlines()[:2]
    assert "CPU Affinity" in head and "NUMA Affinity" in head and "NV#" in res.stdout
    cells = row0.split("\t")[2:len(staged(profile).state["gpus"]) + 1]
    if nv:
        assert set(cells) == {nv}
    else:
        assert not any(c.startswith("NV") for c in cells)


def test_nvlink_status(staged, dev_root):
    res = staged("gb300").run(["nvlink", "-s"], str(dev_root))
    assert res.returncode == 0
    assert "\t Link 0: 53.125 GB/s" in res.stdout and res.stdout.count("Link 17:") == 8


@pytest.mark.parametrize("args", [["--no-such-flag"], ["topo"], ["-i"], ["frobnicate"]])
def test_unsupported_is_an_error_without_traceback(staged, dev_root, args):
    res = staged("t4").run(args, str(dev_root))
    assert res.returncode != 0 and "Traceback" not in res.stderr + res.stdout


def test_vgpu_is_not_supported_with_255(staged, dev_root):
    res = staged("t4").run(["vgpu"], str(dev_root))
    assert res.returncode == 255 and "Not supported on the device(s)" in res.stdout


def test_pmon_through_the_staged_shim_shows_the_idle_gpu(staged, dev_root):
    res = staged("t4").run(["pmon", "-c", "1"], str(dev_root))
    assert res.returncode == 0
    assert res.stdout.splitlines()[2] == "    0          -     -      -      -      -      -      -      -    -              "
