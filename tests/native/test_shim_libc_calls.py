"""Every libc path call the shims cover, from a C program built here with the
system gcc (tests/native/pathprobe.py): plain, fortified (__open_2, __openat_2,
__readlink_chk, __realpath_chk) and with 64-bit offsets (open64, stat64,
fopen64, scandir64 ...); and the shim under threads and inside a signal handler."""

from __future__ import annotations

import os

import pytest

from mokka.core import names
from tests.native.ibnode import ib_node, shim_libs  # noqa: F401 (fixtures)
from tests.native.pathprobe import FLAVOURS, no_shims, probes, report, run  # noqa: F401 (fixture)
from tests.native.test_path_shims import preload

GPU0 = "/sys/bus/pci/devices/0000:1a:00.0"
XATTR_CALLS = ("getxattr", "lgetxattr", "listxattr", "llistxattr", "setxattr", "lsetxattr",
               "removexattr", "lremovexattr")


def staged(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_every_call_reads_the_staged_pci_tree(ib_node, probes, flavour):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.FS_LIB_FILE]), **node.gpu_env()}
    vendor, gpu = report(probes[flavour], env, f"{GPU0}/vendor", GPU0)
    inode = f"ino {os.stat(staged(node.overlay.root, GPU0 + '/vendor')).st_ino}"
    assert {k: v for k, v in vendor.items() if k not in XATTR_CALLS} == {
        "open": "0x10de", "openat": "0x10de", "fopen": "0x10de", "stat": inode, "lstat": inode,
        "fstatat": inode, "statx": inode, "access": "ok", "faccessat": "ok", "euidaccess": "ok",
        "readlink": "Invalid argument", "readlinkat": "Invalid argument",
        "realpath": os.path.realpath(staged(node.overlay.root, GPU0 + "/vendor")),
        "opendir": "Not a directory", "scandir": "Not a directory", "chdir": "Not a directory"}
    # The staged file, not the host's missing one: whatever its filesystem answers, not ENOENT.
    assert all(vendor[call] != "No such file or directory" for call in XATTR_CALLS), vendor
    attributes = sorted(os.listdir(staged(node.overlay.root, GPU0)))
    assert len(attributes) == 11                        # ten attribute files and the driver link
    assert gpu["readlink"] == gpu["readlinkat"] == \
        "../../../devices/pci0000:00/0000:00:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0"
    assert gpu["opendir"] == gpu["scandir"] == ",".join(attributes)
    assert gpu["chdir"] == os.path.realpath(staged(node.overlay.root, GPU0))


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_every_call_reads_the_staged_ib_tree(ib_node, probes, flavour):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.IB_SYS_LIB_FILE]), **node.ib_env()}
    hca = "/sys/class/infiniband/mlx5_0"
    fw, device = report(probes[flavour], env, f"{hca}/fw_ver", hca)
    assert fw["open"] == fw["openat"] == fw["fopen"] == "28.39.2048"
    assert device["readlink"] == "Invalid argument"            # a directory there, not a link
    assert {k: device[k] for k in ("stat", "lstat", "fstatat", "statx")} == dict.fromkeys(
        ("stat", "lstat", "fstatat", "statx"), f"ino {os.stat(staged(node.overlay.ib, hca)).st_ino}")
    assert {k: device[k] for k in ("access", "faccessat", "euidaccess")} == dict.fromkeys(
        ("access", "faccessat", "euidaccess"), "ok")
    entries = ",".join(sorted(os.listdir(staged(node.overlay.ib, hca))))
    assert device["opendir"] == device["scandir"] == entries
    assert device["chdir"] == device["realpath"] == os.path.realpath(staged(node.overlay.ib, hca))


def test_unset_variables_leave_every_call_on_the_host(ib_node, probes):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.FS_LIB_FILE], node.shims[names.IB_SYS_LIB_FILE])}
    paths = (f"{GPU0}/vendor", GPU0, "/sys/class/infiniband/mlx5_0")
    assert report(probes["fortify"], env, *paths) == report(probes["fortify"], no_shims(), *paths)


def test_threads_and_a_signal_handler_share_the_shim(ib_node, probes):
    node = ib_node("h100")
    env = {"LD_PRELOAD": preload(node.shims[names.FS_LIB_FILE]), **node.gpu_env()}
    got = run(probes["fortify, 64-bit offsets"], env, "stress", f"{GPU0}/numa_node", "8")
    assert got == "ok busy\n"
