#!/usr/bin/env python3
"""Lay Mokka's own files into an image tree, from the build host (never by running
anything inside the tree, so an arm64 tree is finished on an amd64 host alike).

    python3 image/finish.py zipapp TREE ZIPAPP
        TREE/usr/local/bin/mokka and its links, with the zipapp's site-packages
        unpacked under SHIV_ROOT and byte-compiled (image/Dockerfile uses this too)
    python3 image/finish.py rootfs TREE NVIDIA_SMI
        NVIDIA's nvidia-smi, the users, no package manager state, no device nodes,
        and the Python stdlib byte-compiled (mmdebstrap's extract variant runs no
        maintainer scripts, so nothing compiled it)

Bytecode is written with unchecked hashes: valid whatever the files' mtimes
(build.sh sets them all to SOURCE_DATE_EPOCH), identical from build to build, and
never rewritten, which a read-only root filesystem could not do anyway.
"""

from __future__ import annotations

import compileall
import json
import os
import py_compile
import shutil
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layout  # noqa: E402

#: Left out of the image: the package manager's state and caches (nothing installs
#: into the image after the build), logs, and mmdebstrap's own files.
DROP = ("var/lib/dpkg", "var/lib/apt", "var/cache/apt", "var/cache/debconf", "var/cache/ldconfig",
        "var/log", "etc/apt", "etc/dpkg", "etc/machine-id", "etc/hostname", "etc/resolv.conf",
        "etc/hosts")


class FinishError(RuntimeError):
    pass


def under(tree: str, path: str) -> str:
    return os.path.join(tree, path.lstrip("/"))


def _compile(tree: str, path: str) -> None:
    """Byte-compile ``path`` (in the image: ``/`` + its path under ``tree``), recording
    the image's path in the bytecode, not the build folder's."""
    # quiet=1 prints only errors; a source that does not compile (a Python 2 leftover
    # in a package) is skipped, as py3compile skips it.
    compileall.compile_dir(path, quiet=1, workers=1, ddir="/" + os.path.relpath(path, tree),
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)


def _check_python() -> None:
    have = "%d.%d" % sys.version_info[:2]
    if have != layout.PYTHON_VERSION:
        raise FinishError(f"this Python is {have}; the image's is {layout.PYTHON_VERSION}, and its "
                          f"bytecode must come from the same minor: run with python{layout.PYTHON_VERSION}")


def zipapp(tree: str, app: str) -> None:
    _check_python()
    target = under(tree, layout.MOKKA)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(app, target)
    os.chmod(target, 0o755)
    for name in layout.LINKS:
        link = os.path.join(os.path.dirname(target), name)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(os.path.basename(target), link)
    with zipfile.ZipFile(app) as archive:
        env = json.loads(archive.read("environment.json"))
        # shiv's cache_path(): SHIV_ROOT/<name of the zipapp>_<build id>/site-packages
        unpacked = os.path.join(under(tree, layout.SHIV_ROOT),
                                f"{os.path.basename(layout.MOKKA)}_{env['build_id']}")
        shutil.rmtree(unpacked, ignore_errors=True)
        for info in archive.infolist():
            if info.filename.startswith("site-packages/"):
                path = archive.extract(info, unpacked)
                os.chmod(path, (info.external_attr >> 16) or 0o644)
    _compile(tree, os.path.join(unpacked, "site-packages"))


def rootfs(tree: str, nvidia_smi: str) -> None:
    _check_python()
    stdlib = under(tree, f"/usr/lib/python{layout.PYTHON_VERSION}")
    if not os.path.isdir(stdlib):
        raise FinishError(f"{tree}: no {stdlib}: the tree has no Python {layout.PYTHON_VERSION} "
                          "(install python3-minimal from bookworm)")
    for rel in DROP:
        path = os.path.join(tree, rel)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
    # The runtime mounts /dev; mmdebstrap left a few nodes there.
    dev = os.path.join(tree, "dev")
    shutil.rmtree(dev, ignore_errors=True)
    os.makedirs(dev, mode=0o755)
    for rel, mode in (("tmp", 0o1777), ("root", 0o700), ("proc", 0o755), ("sys", 0o755), ("run", 0o755),
                      (layout.NONROOT_HOME.lstrip("/"), 0o755)):
        path = os.path.join(tree, rel)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)
    home = under(tree, layout.NONROOT_HOME)
    os.chown(home, layout.NONROOT_UID, layout.NONROOT_UID)
    for name, text in (("passwd", layout.PASSWD), ("group", layout.GROUP)):
        with open(os.path.join(tree, "etc", name), "w") as f:
            f.write(text)
    target = under(tree, layout.NVIDIA_SMI)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(nvidia_smi, target)
    os.chmod(target, 0o755)
    _compile(tree, stdlib)


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 3 and argv[0] == "zipapp":
            zipapp(argv[1], argv[2])
        elif len(argv) == 3 and argv[0] == "rootfs":
            rootfs(argv[1], argv[2])
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    except (FinishError, OSError, KeyError, zipfile.BadZipFile) as exc:
        print(f"finish.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
