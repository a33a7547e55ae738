"""libibmocksys and libmockfs, proven with Debian bookworm's own ibstat, ibstatus
and lspci over a node staged by the real agent, with the environment seed 000
gives an InfiniBand-selected (or GPU-selected) container."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from mokka.core import names
from tests.native.conftest import SANITIZER_PRELOAD
from tests.native.ibnode import ib_node, shim_libs  # noqa: F401 (fixtures)


def preload(*libs: str) -> str:
    """The sanitizer runtime first when test_sanitized.py reruns this module."""
    asan = os.environ.get(SANITIZER_PRELOAD)
    return ":".join(([asan] if asan else []) + list(libs))


def sanitizer_env() -> dict:
    return {k: v for k, v in os.environ.items() if k in ("ASAN_OPTIONS", "UBSAN_OPTIONS")}

IB_PROFILES = {"a100": 8, "h100": 8, "b200": 8, "gb200": 8, "gb300": 8}
GUID = re.compile(r"Node GUID: 0x([0-9a-f]{16})")


@pytest.mark.parametrize("profile", sorted(IB_PROFILES))
def test_ibstat_l_lists_exactly_the_profiles_hcas(ib_node, profile):
    node = ib_node(profile)
    done = node.run("IBSTAT", "-l", env=node.ib_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"mlx5_{i}" for i in range(IB_PROFILES[profile])]


def test_ibstat_mlx5_0_shows_the_profile_attributes(ib_node):
    node = ib_node("gb300")
    done = node.run("IBSTAT", "mlx5_0", env=node.ib_env())
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("CA 'mlx5_0'\n")
    for line in ("\tCA type: MT4129\n", "\tFirmware version: 28.43.1000\n",
                 "\t\tState: Active\n", "\t\tPhysical state: LinkUp\n", "\t\tRate: 400\n",
                 "\t\tLink layer: InfiniBand\n", "\tNumber of ports: 1\n"):
        assert line in out, out
    # gb300's guid_prefix "9b88c2:0301:cd": its first four bytes lead the node GUID.
    assert GUID.search(out).group(1).startswith("9b88c203")


def test_ibstat_a100_rate_200(ib_node):
    node = ib_node("a100")
    done = node.run("IBSTAT", "mlx5_3", env=node.ib_env())
    assert "\t\tRate: 200\n" in done.stdout and "\tFirmware version: 20.36.1010\n" in done.stdout


def test_ibstatus_shows_every_port_active(ib_node):
    node = ib_node("h100")
    done = node.run("IBSTATUS", env=node.ib_env())
    assert done.returncode == 0, done.stderr
    states = re.findall(r"\tstate:\t\t (.*)", done.stdout)
    assert states == ["4: ACTIVE"] * 8
    assert "Infiniband device 'mlx5_7' port 1 status:" in done.stdout


def test_sysfs_tier_rewrites_paths_too(ib_node):
    node = ib_node("h100")
    env = {**node.ib_env(), names.ENV_IB: names.IB_SYSFS}
    assert node.run("IBSTAT", "-l", env=env).stdout.splitlines()[0] == "mlx5_0"


@pytest.mark.parametrize("env_change", [
    {names.ENV_IB: names.IB_OFF},
    {names.ENV_IB: None},
    {names.ENV_IB_ROOT: None},
    {names.ENV_IB: "bogus"},
], ids=["MOCK_IB=off hides the HCAs", "MOCK_IB unset: no effect",
        "MOCK_IB_ROOT unset: no effect", "an unknown tier: no effect"])
def test_without_the_tier_the_host_sysfs_is_read(ib_node, env_change):
    node = ib_node("h100")
    env = {k: v for k, v in {**node.ib_env(), **env_change}.items() if v is not None}
    with_shim = node.run("IBSTAT", "-l", env=env)
    without = node.run("IBSTAT", "-l", env=env, preload=False)
    assert with_shim.returncode == without.returncode
    assert with_shim.stdout == without.stdout
    assert "mlx5_0" not in with_shim.stdout or os.path.isdir("/sys/class/infiniband/mlx5_0")


def test_gpu_only_container_sees_no_mock_hca(ib_node):
    node = ib_node("h100")
    done = node.run("IBSTAT", "-l", env=node.gpu_env())
    assert done.stdout == node.run("IBSTAT", "-l", env={}, preload=False).stdout


def test_ib_off_profile_lists_nothing_and_exits_as_the_real_tool(ib_node):
    node = ib_node("t4")
    assert os.listdir(node.overlay.ib) == []
    done = node.run("IBSTAT", "-l", env=node.ib_env())
    assert (done.returncode, done.stdout) == (0, "")


def test_a_root_that_would_overflow_fails_with_enametoolong_not_the_host_path(ib_node, tmp_path):
    node = ib_node("h100")
    env = {**node.ib_env(), names.ENV_IB_ROOT: "/" + "r" * 4090}
    done = node.run("IBSTATUS", env=env)
    # ibstatus cds into /sys/class/infiniband: the shim fails the chdir instead of
    # letting the host's own directory through.
    assert done.stdout.strip() == "Fatal error:  No devices"


def gpus(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def test_lspci_lists_every_staged_gpu_with_the_profiles_device_id(ib_node):
    node = ib_node("h100")
    done = node.run("LSPCI", "-n", "-d", "10de:", env=node.gpu_env())
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 8
    assert all(re.fullmatch(r"[0-9a-f]{2}:00\.0 0302: 10de:2330", line) for line in lines), lines


def test_lspci_vmm_shows_the_numa_node(ib_node):
    node = ib_node("h100")
    done = node.run("LSPCI", "-vmm", "-d", "10de:", env=node.gpu_env())
    numa = re.findall(r"^NUMANode:\t(\d+)$", done.stdout, re.M)
    assert len(numa) == 8 and set(numa) == {"0", "1"}, done.stdout


def test_lspci_without_mock_pci_root_shows_the_host_bus(ib_node):
    node = ib_node("h100")
    env = {k: v for k, v in node.gpu_env().items() if k != names.ENV_PCI_ROOT}
    with_shim = node.run("LSPCI", "-n", env=env)
    without = node.run("LSPCI", "-n", env={}, preload=False)
    assert with_shim.stdout == without.stdout
    assert "10de:2330" not in with_shim.stdout


def test_shims_do_not_touch_other_paths(ib_node, tmp_path):
    node = ib_node("h100")
    (tmp_path / "f").write_text("plain\n")
    env = {**node.ib_env(), **node.gpu_env(), names.ENV_IB: names.IB_FULL}
    done = subprocess.run(["cat", str(tmp_path / "f"), "/proc/self/comm"], capture_output=True,
                          text=True, env={"LD_PRELOAD": node.preload(), **env, **sanitizer_env()})
    assert done.stdout == "plain\ncat\n"


@pytest.mark.parametrize("extra, error", [(0, "ENOENT"), (1, "ENAMETOOLONG")],
                         ids=["a rewrite that fits: the mock path is tried",
                              "one byte over: ENAMETOOLONG, never the host path"])
def test_rewrite_length_boundary(shim_libs, extra, error):
    path = "/sys/bus/pci/devices"
    size = 4095 - len(path) + extra                        # root + path: 4095 (+1) bytes
    root = ("/" + "r" * 199) * (size // 200) + "/" + "s" * (size % 200 - 1)
    assert len(root + path) == 4095 + extra
    code = ("import os, errno\n"
            "for f in (os.stat, os.listdir, open):\n"
            "    try:\n"
            "        f('%s')\n"
            "    except OSError as e:\n"
            "        print(errno.errorcode[e.errno])\n" % path)
    done = subprocess.run(["python3", "-c", code], capture_output=True, text=True,
                          env={"LD_PRELOAD": preload(shim_libs[names.FS_LIB_FILE]),
                               names.ENV_PCI_ROOT: root, "PATH": os.environ["PATH"],
                               **sanitizer_env()})
    lines = done.stdout.split()
    assert lines[:3] == [error] * 3, done
