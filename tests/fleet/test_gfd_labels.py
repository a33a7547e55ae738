"""kwok-nodes' labels against what NVIDIA's gpu-feature-discovery v0.18.0 itself wrote on
nodes staged from the same profiles (tests/fleet/gfd/, see its README)."""

from __future__ import annotations

import os

import pytest
import yaml

from mokka.cmd.main import main

HERE = os.path.join(os.path.dirname(__file__), "gfd")
CASES = sorted(name[:-len(".labels")] for name in os.listdir(HERE) if name.endswith(".labels"))


def gfd_wrote(case: str) -> dict[str, str]:
    with open(os.path.join(HERE, case + ".labels")) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if line.strip())


def kwok_labels(capsysbinary, *args: str) -> dict[str, str]:
    assert main(["mokka", "kwok-nodes", "--count", "1", *args]) == 0
    node, = yaml.safe_load_all(capsysbinary.readouterr().out)
    return {k: v for k, v in node["metadata"]["labels"].items() if k.startswith("nvidia.com/")}


def test_every_case_is_here():
    assert len(CASES) == 13
    assert "h100.all-balanced.mixed" in CASES and "t4.none" in CASES


@pytest.mark.parametrize("case", CASES)
def test_labels_equal_what_gfd_wrote(capsysbinary, case):
    profile, *layout, strategy = case.split(".", 1)[0], *case.split(".")[1:-1], case.rsplit(".", 1)[1]
    layout_name = ".".join(layout)
    args = ["--profile", profile, "--mig-strategy", strategy]
    if layout_name:
        args += ["--mig-layout", layout_name]
    assert kwok_labels(capsysbinary, *args) == gfd_wrote(case)


def test_the_files_hold_what_gfd_says_of_an_h100(capsysbinary):
    """A few of the recorded values, spelt out: the files are GFD's, not ours."""
    wrote = gfd_wrote("h100.all-balanced.mixed")
    assert wrote["nvidia.com/mig-3g.40gb.count"] == "8"
    assert wrote["nvidia.com/mig-3g.40gb.memory"] == "40448"
    assert wrote["nvidia.com/mig-1g.10gb.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
    assert wrote["nvidia.com/gpu.replicas"] == "0"
    assert gfd_wrote("h100.all-balanced.single")["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-INVALID"
    assert gfd_wrote("l40s.none")["nvidia.com/gpu.family"] == "ada-lovelace"
