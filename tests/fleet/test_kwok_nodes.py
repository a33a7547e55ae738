"""mokka kwok-nodes as a user runs it: Node objects kubectl and KWOK take, GPU resources as
NVIDIA's device plugin advertises them, pools from the chart's values, one line for bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from mokka.cmd.main import main


def run(capsysbinary, *args: str) -> list[dict]:
    assert main(["mokka", "kwok-nodes", *args]) == 0
    return list(yaml.safe_load_all(capsysbinary.readouterr().out))


def refused(capsys, *args: str) -> tuple[int, list[str]]:
    status = main(["mokka", "kwok-nodes", *args])
    captured = capsys.readouterr()
    assert captured.out == ""
    return status, captured.err.splitlines()


def test_nodes_are_named_in_order_and_managed_by_kwok(capsysbinary):
    nodes = run(capsysbinary, "--profile", "h100", "--count", "3", "--name-prefix", "rack-a")
    assert [n["metadata"]["name"] for n in nodes] == ["rack-a-0", "rack-a-1", "rack-a-2"]
    for n in nodes:
        assert n["kind"] == "Node" and n["apiVersion"] == "v1"
        assert n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert n["spec"]["taints"] == [{"key": "kwok.x-k8s.io/node", "value": "fake",
                                        "effect": "NoSchedule"}]
        assert n["metadata"]["labels"]["kubernetes.io/hostname"] == n["metadata"]["name"]
        assert n["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] == "true"


def test_whole_gpus_are_the_gpu_resource(capsysbinary):
    node, = run(capsysbinary, "--profile", "h100")
    assert node["status"]["capacity"] == {"cpu": "32", "memory": "256Gi", "pods": "110",
                                          "nvidia.com/gpu": "8"}
    assert node["status"]["allocatable"] == node["status"]["capacity"]


def test_gpu_count_changes_the_resource_and_the_count_label(capsysbinary):
    node, = run(capsysbinary, "--profile", "t4", "--gpu-count", "2")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "2"
    assert node["metadata"]["labels"]["nvidia.com/gpu.count"] == "2"
    assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-T4"


def test_single_strategy_counts_mig_devices_as_gpus(capsysbinary):
    node, = run(capsysbinary, "--profile", "h100", "--mig-layout", "all-1g.10gb", "--mig-strategy", "single")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "56"
    assert node["metadata"]["labels"]["nvidia.com/gpu.memory"] == "9984"


def test_mixed_strategy_advertises_each_kind_of_mig_device(capsysbinary):
    node, = run(capsysbinary, "--profile", "a100", "--mig-layout", "all-balanced", "--mig-strategy", "mixed")
    gpu = {k: v for k, v in node["status"]["capacity"].items() if k.startswith("nvidia.com/")}
    assert gpu == {"nvidia.com/mig-1g.5gb": "16", "nvidia.com/mig-2g.10gb": "8", "nvidia.com/mig-3g.20gb": "8"}


def test_an_invalid_single_layout_advertises_no_gpu(capsysbinary):
    node, = run(capsysbinary, "--profile", "h100", "--mig-layout", "all-balanced", "--mig-strategy", "single")
    assert "nvidia.com/gpu" not in node["status"]["capacity"]
    assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-INVALID"


def test_arch_and_host_sizes(capsysbinary):
    node, = run(capsysbinary, "--profile", "gb200", "--arch", "arm64", "--cpu", "144", "--memory", "1Ti")
    assert node["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    assert node["status"]["nodeInfo"]["architecture"] == "arm64"
    assert node["status"]["capacity"]["cpu"] == "144" and node["status"]["capacity"]["memory"] == "1Ti"


VALUES = """
pools:
  - name: h100
    nodeSelector: {pool: h100}
    profile: h100
    count: 4
  - name: t4
    nodeSelector: {pool: t4, zone: b}
    profile: t4
    migLayout: ""
"""


def test_pools_from_a_values_file(capsysbinary, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(VALUES)
    nodes = run(capsysbinary, "--values", str(values), "--count", "2", "--name-prefix", "sim")
    assert [n["metadata"]["name"] for n in nodes] == ["sim-h100-0", "sim-h100-1", "sim-t4-0", "sim-t4-1"]
    assert nodes[0]["metadata"]["labels"]["pool"] == "h100"
    assert nodes[0]["status"]["capacity"]["nvidia.com/gpu"] == "4"
    assert nodes[2]["metadata"]["labels"]["zone"] == "b"
    assert nodes[2]["status"]["capacity"]["nvidia.com/gpu"] == "4"
    assert nodes[2]["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-T4"


def test_output_validates_strictly_as_nodes(tmp_path):
    pytest.importorskip("kubernetes_validate")
    out = tmp_path / "nodes.yaml"
    with open(out, "wb") as f:
        done = subprocess.run([sys.executable, "-m", "mokka", "kwok-nodes", "--profile", "a100",
                               "--count", "2", "--mig-layout", "all-balanced", "--mig-strategy", "mixed"],
                              stdout=f, timeout=120)
    assert done.returncode == 0
    check = subprocess.run([sys.executable, "-m", "kubernetes_validate", "--strict", "-k", "1.31", "--quiet",
                            str(out)], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("args, status, line", [
    (("--count", "0"), 2,
     "mokka kwok-nodes: invalid value for '--count': 0 is not in the range 1<=x<=10000 (see 'mokka kwok-nodes --help')"),
    (("--gpu-count", "65"), 2,
     "mokka kwok-nodes: invalid value for '--gpu-count': 65 is not in the range 1<=x<=64 (see 'mokka kwok-nodes --help')"),
    (("--name-prefix", "Rack_A"), 1,
     "kwok-nodes: --name-prefix 'Rack_A': 'Rack_A-0' is not a valid node name (lower-case letters, digits, "
     "'-' and '.', starting and ending with a letter or digit)"),
    (("--profile", "h100", "--mig-layout", "all-9g"), 1,
     "kwok-nodes: profile h100: --mig-layout all-9g: not one of the profile's mig.layouts (all-1g.10gb, "
     "all-1g.20gb, all-2g.20gb, all-3g.40gb, all-4g.40gb, all-7g.80gb, all-balanced, all-enabled)"),
])
def test_bad_flags_are_one_line(capsys, args, status, line):
    got, lines = refused(capsys, *args)
    assert (got, lines) == (status, [line])


def test_an_unknown_profile_is_one_line(capsys):
    status, lines = refused(capsys, "--profile", "h200")
    assert status == 1 and len(lines) == 1 and "h200" in lines[0]


@pytest.mark.parametrize("values, line", [
    ("pools:\n  - name: a\n    profile: h100\n",
     "pools[0].nodeSelector: a pool needs a nodeSelector (a map of labels)"),
    ("pools:\n  - {name: a, nodeSelector: {p: a}}\n  - {name: a, nodeSelector: {p: b}}\n",
     "pools[1]: a second pool named 'a' (pool names are unique)"),
    ("pools:\n  - {name: a, nodeSelector: {p: a}, count: 99}\n",
     "pools[0].count: 99 is out of range (1-64)"),
    ("pools:\n  - {nodeSelector: {p: a}}\n", "pools[0]: a pool needs a name"),
])
def test_bad_pools_are_one_line(capsys, tmp_path, values, line):
    path = tmp_path / "values.yaml"
    path.write_text(values)
    status, lines = refused(capsys, "--values", str(path))
    assert (status, lines) == (1, [f"kwok-nodes: {path}: {line}"])
