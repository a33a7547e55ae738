"""Every libc path call the shims cover, from a C program built here with the
system gcc: plain, fortified (__open_2, __openat_2, __readlink_chk,
__realpath_chk) and with 64-bit offsets (open64, stat64, fopen64, scandir64 ...);
and the shim under threads and inside a signal handler."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from mokka.core import names
from tests.native.ibnode import ib_node, shim_libs  # noqa: F401 (fixtures)
from tests.native.test_path_shims import preload, sanitizer_env

HERE = os.path.dirname(os.path.abspath(__file__))
GPU0 = "/sys/bus/pci/devices/0000:1a:00.0"
FLAVOURS = {"fortify": ["-D_FORTIFY_SOURCE=2"],
            "fortify, 64-bit offsets": ["-D_FORTIFY_SOURCE=2", "-D_FILE_OFFSET_BITS=64"]}


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> dict[str, str]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the libc probe (apt-get install gcc)")
    out = tmp_path_factory.mktemp("pathprobe")
    built = {}
    for name, flags in FLAVOURS.items():
        exe = str(out / name.replace(",", "").replace(" ", "-"))
        subprocess.run(["gcc", "-O2", "-pthread", *flags, "-o", exe,
                        os.path.join(HERE, "c", "pathprobe.c")], check=True)
        built[name] = exe
    return built


def run(exe: str, env: dict, *args: str) -> dict[str, str]:
    done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], **env, **sanitizer_env()})
    assert done.returncode == 0, done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_every_call_reads_the_staged_pci_tree(ib_node, probes, flavour):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.FS_LIB_FILE]), **node.gpu_env()}
    got = run(probes[flavour], env, "calls", GPU0, "vendor", GPU0)
    assert got == {
        "open": "0x10de", "openat": "ok", "fopen": "ok", "stat": "ok", "lstat": "ok",
        "fstatat": "ok", "access": "ok", "faccessat": "ok",
        "readlink": "../../../devices/pci0000:00/0000:1a:00.0", "realpath": "ok", "opendir": "ok",
        "scandir": "12", "chdir": "ok"}        # 10 attribute files, . and ..


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_every_call_reads_the_staged_ib_tree(ib_node, probes, flavour):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.IB_SYS_LIB_FILE]), **node.ib_env()}
    got = run(probes[flavour], env, "calls", "/sys/class/infiniband/mlx5_0", "fw_ver",
              "/sys/class/infiniband/mlx5_0")
    assert got["open"] == "28.39.2048"
    assert got["readlink"] == "Invalid argument"            # a directory there, not a link
    assert {k: v for k, v in got.items() if k not in ("open", "readlink", "scandir")} == dict.fromkeys(
        ("openat", "fopen", "stat", "lstat", "fstatat", "access", "faccessat", "realpath", "opendir",
         "chdir"), "ok")


def test_unset_variables_leave_every_call_on_the_host(ib_node, probes):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.FS_LIB_FILE], node.shims[names.IB_SYS_LIB_FILE])}
    got = run(probes["fortify"], env, "calls", GPU0, "vendor", GPU0)
    plain = run(probes["fortify"], {}, "calls", GPU0, "vendor", GPU0)
    assert got == plain


def test_threads_and_a_signal_handler_share_the_shim(ib_node, probes):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.FS_LIB_FILE]), **node.gpu_env()}
    got = run(probes["fortify, 64-bit offsets"], env, "stress", f"{GPU0}/numa_node", "8")
    assert got == {"ok": "busy"}
