"""Per-node identity and ``--gpu-count`` (issue 37), as the real agent stages them:
what NVIDIA's nvidia-smi 550, pynvml, numba-cuda and the CDI specs read on each node."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from mokka.core import names
from mokka.core.overlay import host_overlay
from tests.native.staged import clean_env, nvml_build  # noqa: F401 (fixture)
from tests.peers import peer

#: h100's GPU 0 as the profile writes it, and as node "a" has it.
H100_GPU0 = ("GPU-01000100-0000-0000-0000-000000000000", "1562821083900")
NODE_A_GPU0 = ("GPU-a4a3cc14-f6c4-bd12-f7dd-066559d01c00", "1562139092374")

NUMBA_PROBE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda",
                           "numba_probe.py")
PYNVML = ("import json, pynvml as n; n.nvmlInit(); hs = [n.nvmlDeviceGetHandleByIndex(i) "
          "for i in range(n.nvmlDeviceGetCount())]; print(json.dumps([[n.nvmlDeviceGetUUID(h), "
          "n.nvmlDeviceGetSerial(h), n.nvmlDeviceGetBoardId(h)] for h in hs]))")


def agent(root: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mokka", "node-agent", "--host-root", root, "--health-addr", "",
           "--log-format", "plain", "--container-runtime", "none", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**clean_env(), **(env or {})})


@pytest.fixture
def nodes(tmp_path, nvml_build):
    """stage(name, *args) -> the node's root, staged --once with NVIDIA's nvidia-smi;
    every node is torn down at the end."""
    roots = []
    smi = peer("NVIDIA_SMI")

    def stage(name: str, *args: str, env: dict | None = None) -> str:
        root = str(tmp_path / name)
        os.makedirs(root, exist_ok=True)
        if root not in roots:
            roots.append(root)
        done = agent(root, "--nvidia-smi", smi, "--once", *args, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        return root

    yield stage
    for root in roots:
        agent(root, "--teardown")


def node_env(root: str) -> dict:
    dev_root = os.path.join(root, "empty-dev-root")
    os.makedirs(dev_root, exist_ok=True)
    return clean_env(**{names.ENV_DEV_ROOT: dev_root})


def smi_list(root: str) -> list[str]:
    """The UUIDs NVIDIA's staged nvidia-smi -L prints, GPUs and MIG devices in order."""
    done = subprocess.run([os.path.join(host_overlay(root).bin, "nvidia-smi"), "-L"],
                          capture_output=True, text=True, timeout=60, env=node_env(root))
    assert done.returncode == 0, done.stderr
    return [line.rsplit("(UUID: ", 1)[1].rstrip(")") for line in done.stdout.splitlines()]


def pynvml_gpus(root: str) -> list[list]:
    """[uuid, serial, board id] of each GPU, as pynvml reads them over the staged library."""
    env = {**node_env(root), "LD_LIBRARY_PATH": host_overlay(root).lib}
    done = subprocess.run([sys.executable, "-c", PYNVML], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cdi_names(root: str, file: str = names.CDI_SPEC_GPU_FILE) -> list[str]:
    with open(os.path.join(root, names.CDI_SPEC_DIR.lstrip("/"), file)) as f:
        return [d["name"] for d in yaml.safe_load(f)["devices"]]


def numba_uuids(root: str) -> list[str]:
    """The UUIDs numba-cuda lists over the staged mock CUDA driver."""
    env = {**node_env(root), "LD_LIBRARY_PATH": host_overlay(root).lib}
    for name in (names.ENV_CUDA_VISIBLE_DEVICES, names.ENV_CUDA_DEVICE_ORDER):
        env.pop(name, None)
    done = subprocess.run([sys.executable, NUMBA_PROBE], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return [d["uuid"] for d in json.loads(done.stdout)["devices"]]


def identities(root: str, cuda: bool = False) -> tuple[list[str], list[str]]:
    """(UUIDs, serials) of a node, once NVIDIA's nvidia-smi, pynvml, the CDI spec (and,
    with ``cuda``, numba-cuda) are seen to agree on the UUIDs."""
    gpus = pynvml_gpus(root)
    uuids = [g[0] for g in gpus]
    assert smi_list(root) == uuids
    assert [n for n in cdi_names(root) if n.startswith("GPU-")] == uuids
    if cuda:
        assert numba_uuids(root) == uuids
    return uuids, [g[1] for g in gpus]


def test_two_named_nodes_have_disjoint_identities_and_keep_them_across_a_restage(nodes):
    a = nodes("a", "--profile", "h100", "--node-name", "a")
    b = nodes("b", "--profile", "h100", env={"NODE_NAME": "b"})     # the chart's way
    uuids_a, serials_a = identities(a, cuda=True)
    uuids_b, serials_b = identities(b, cuda=True)
    assert (uuids_a[0], serials_a[0]) == NODE_A_GPU0
    assert len(set(uuids_a)) == len(set(uuids_b)) == 8 and not set(uuids_a) & set(uuids_b)
    assert len(set(serials_a)) == len(set(serials_b)) == 8 and not set(serials_a) & set(serials_b)
    assert not set(uuids_a + uuids_b) & {f"GPU-01000100-0000-0000-0000-00000000000{i}" for i in range(8)}
    assert all(len(s) == 13 and s.isdigit() and s.startswith("1562") for s in serials_a + serials_b)
    boards_a = [g[2] for g in pynvml_gpus(a)]
    assert len(set(boards_a)) == 8 and not set(boards_a) & {g[2] for g in pynvml_gpus(b)}

    assert agent(a, "--teardown").returncode == 0
    assert not os.path.exists(os.path.join(a, names.CDI_SPEC_DIR.lstrip("/"), names.CDI_SPEC_GPU_FILE))
    nodes("a", "--profile", "h100", "--node-name", "a")
    assert identities(a) == (uuids_a, serials_a)


def test_without_a_node_name_the_profiles_identities_stand(nodes):
    root = nodes("unnamed", "--profile", "h100")
    uuids, serials = identities(root)
    assert (uuids[0], serials[0]) == H100_GPU0
    assert uuids[7] == "GPU-01000100-0000-0000-0000-000000000007"


def test_a_profile_that_keeps_its_identities_keeps_them_on_a_named_node(nodes, tmp_path):
    from mokka.core import profile as prof
    _, text = prof.read("h100")
    doc = yaml.safe_load(text)
    doc["system"]["identity"] = "fixed"
    path = tmp_path / "replayed.yaml"
    path.write_text(yaml.safe_dump(doc))
    root = nodes("fixed", "--profile", str(path), "--node-name", "a")
    uuids, serials = identities(root)
    assert (uuids[0], serials[0]) == H100_GPU0


def test_mig_device_uuids_differ_by_node_and_the_cdi_spec_names_them(nodes):
    seen = {}
    for node in ("a", "b"):
        root = nodes(node, "--profile", "h100", "--gpu-count", "2", "--mig-layout", "all-2g.20gb",
                     "--node-name", node)
        listed = smi_list(root)
        migs = [u for u in listed if u.startswith("MIG-")]
        assert len(migs) == 6                      # three 2g.20gb instances on each of 2 GPUs
        assert sorted(n for n in cdi_names(root, names.CDI_SPEC_MIG_FILE) if n.startswith("MIG-")) \
            == sorted(migs)
        seen[node] = set(migs)
    assert not seen["a"] & seen["b"]


def test_gpu_count_stages_that_many_gpus_of_a_built_in_profile(nodes):
    root = nodes("four", "--profile", "h100", "--gpu-count", "4")
    ov = host_overlay(root)
    assert len(pynvml_gpus(root)) == 4
    assert sorted(n for n in os.listdir(ov.dev) if n[6:].isdigit() and n.startswith("nvidia")) \
        == ["nvidia0", "nvidia1", "nvidia2", "nvidia3"]
    assert sorted(os.listdir(os.path.join(ov.sys, "bus", "pci", "drivers", "nvidia"))) == \
        ["0000:1a:00.0", "0000:1b:00.0", "0000:4a:00.0", "0000:4b:00.0"]
    assert cdi_names(root) == ["0", H100_GPU0[0], "1", "GPU-01000100-0000-0000-0000-000000000001",
                               "2", "GPU-01000100-0000-0000-0000-000000000002",
                               "3", "GPU-01000100-0000-0000-0000-000000000003", "all"]


def test_gpu_count_from_the_environment_over_a_profile_file(nodes, tmp_path):
    from mokka.core import profile as prof
    path = tmp_path / "t4.yaml"
    path.write_bytes(prof.read("t4")[1])
    root = nodes("env", "--profile", str(path), env={"MOKKA_AGENT_GPU_COUNT": "12"})
    assert len(pynvml_gpus(root)) == 12


@pytest.mark.parametrize("args, env", [
    (["--gpu-count", "0"], {}), (["--gpu-count", "65"], {}), ([], {"MOKKA_AGENT_GPU_COUNT": "65"}),
])
def test_a_gpu_count_out_of_range_is_one_line_and_exit_2(tmp_path, args, env):
    root = tmp_path / "host"
    root.mkdir()
    done = agent(str(root), "--profile", "h100", "--once", *args, env=env)
    assert done.returncode == 2 and done.stdout == ""
    value = args[1] if args else "65"
    assert done.stderr == (f"mokka node-agent: invalid value for '--gpu-count': {value} is not in "
                           "the range 1<=x<=64 (see 'mokka node-agent --help')\n")
    assert os.listdir(root) == []
