"""The one-layer OCI image the integration pods run: busybox and its applets
(stdlib only; a tree such as Debian's libc6 can be laid in first)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import subprocess
import tarfile
from pathlib import Path
from typing import Sequence

from tests.integration.runtime import fetched

IMAGE_REF = "docker.io/library/mokka-busybox:test"
BUSYBOX_APPLETS = (
    "sh", "ash", "ls", "cat", "env", "printenv", "sleep", "test", "[", "[[", "stat",
    "mount", "umount", "echo", "true", "false", "grep", "id", "ps", "mkdir", "rm",
    "rmdir", "readlink", "realpath", "head", "tail", "wc", "hostname", "uname", "find",
    "touch", "dd", "ln", "kill", "which", "tr", "sed", "awk", "cut", "sort", "uniq",
    "df", "mknod", "xargs", "tee", "od", "hexdump", "nproc", "basename", "dirname",
    "chmod", "chown", "cp", "mv", "date", "du", "free", "timeout", "seq", "base64",
    "sha256sum", "md5sum", "whoami", "pwd", "vi", "less", "more", "nslookup", "ip",
)

def go_arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
            "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}.get(machine, machine)


def _tarinfo(name: str, kind: bytes, mode: int, size: int = 0, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.linkname = linkname
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def busybox_applets(busybox: str) -> list[str]:
    """The applets this busybox has (``busybox --list``), else BUSYBOX_APPLETS."""
    try:
        out = subprocess.run([busybox, "--list"], capture_output=True, text=True, timeout=10, check=True).stdout
        names = sorted({n.strip() for n in out.split() if n.strip() and "/" not in n})
        if names:
            return [n for n in names if n != "busybox"]
    except (OSError, subprocess.SubprocessError):
        pass
    return list(BUSYBOX_APPLETS)


def _add_tree(tar: tarfile.TarFile, root: str) -> None:
    """Every directory, file and symlink under ``root`` (docs left out), as image paths."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if os.path.relpath(os.path.join(dirpath, d), root)
                             not in ("usr/share",))
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames + sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.islink(path):
                tar.addfile(_tarinfo(rel, tarfile.SYMTYPE, 0o777, linkname=os.readlink(path)))
            elif os.path.isdir(path):
                tar.addfile(_tarinfo(rel + "/", tarfile.DIRTYPE, 0o755))
            else:
                data = Path(path).read_bytes()
                tar.addfile(_tarinfo(rel, tarfile.REGTYPE, os.stat(path).st_mode & 0o777, len(data)),
                            io.BytesIO(data))


def _layer_bytes(busybox: str, extra_root: str | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if extra_root:
            _add_tree(tar, extra_root)
        for d in ("bin", "dev", "etc", "proc", "sys", "tmp", "root", "var", "run", "usr", "usr/bin"):
            tar.addfile(_tarinfo(d + "/", tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755))
        data = Path(busybox).read_bytes()
        tar.addfile(_tarinfo("bin/busybox", tarfile.REGTYPE, 0o755, len(data)), io.BytesIO(data))
        for applet in busybox_applets(busybox):
            tar.addfile(_tarinfo(f"bin/{applet}", tarfile.SYMTYPE, 0o777, linkname="busybox"))
        for name, text in (
            ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"),
            ("etc/group", "root:x:0:\nnogroup:x:65534:\n"),
            ("etc/hosts", "127.0.0.1 localhost\n"),
        ):
            raw = text.encode()
            tar.addfile(_tarinfo(name, tarfile.REGTYPE, 0o644, len(raw)), io.BytesIO(raw))
    return buf.getvalue()


def build_busybox_image(path: str | os.PathLike, busybox: str | None = None,
                        ref: str = IMAGE_REF, cmd: Sequence[str] = ("sleep", "3600"),
                        extra_root: str | None = None) -> Path:
    """Write a one-layer OCI image-layout tar holding /bin/busybox plus applet links.

    Its default command is ``sleep 3600`` and its name ``ref`` (stdlib only).
    ``extra_root``: a tree laid in first (e.g. Debian's libc6 unpacked: a glibc
    image with no Python)."""
    if busybox is None:
        busybox = fetched("busybox").busybox
    path = Path(path)
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media_type: str) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer = _layer_bytes(busybox, extra_root)
    layer_desc = blob(layer, "application/vnd.oci.image.layer.v1.tar")
    arch = go_arch()
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "Cmd": list(cmd),
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        "history": [{"created_by": "mokka tests/integration/busybox.py build_busybox_image"}],
    }
    config_desc = blob(json.dumps(config, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_desc,
        "layers": [layer_desc],
    }
    manifest_desc = blob(json.dumps(manifest, sort_keys=True).encode(), "application/vnd.oci.image.manifest.v1+json")
    manifest_desc["platform"] = {"architecture": arch, "os": "linux"}
    manifest_desc["annotations"] = {
        "io.containerd.image.name": ref,
        "org.opencontainers.image.ref.name": ref,
    }
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [manifest_desc]}
    files = [
        ("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
        ("index.json", json.dumps(index, sort_keys=True).encode()),
    ] + [(f"blobs/sha256/{d.split(':', 1)[1]}", data) for d, data in blobs.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("blobs/", "blobs/sha256/"):
            tar.addfile(_tarinfo(d, tarfile.DIRTYPE, 0o755))
        for name, data in files:
            tar.addfile(_tarinfo(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    os.replace(tmp, path)
    return path
