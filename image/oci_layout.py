#!/usr/bin/env python3
"""Write a root filesystem as a one-layer OCI image archive, with the stdlib only.

    python3 image/oci_layout.py ROOTFS OUT --arch amd64|arm64 --epoch SECONDS
                                [--source URL] [--revision COMMIT]

OUT is an OCI image layout in a tar (what ``ctr images import`` and
``skopeo copy oci-archive:`` take), its index naming the image
``docker.io/library/mokka:<version>`` in both ``io.containerd.image.name`` and
``org.opencontainers.image.ref.name``.

Byte-reproducible: entries in sorted order, every mtime SOURCE_DATE_EPOCH (the
``--epoch``), owners by number only, gzip with no name and mtime 0, JSON with
sorted keys. The same tree and arguments give the same sha256.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layout  # noqa: E402

LAYER_MEDIA = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG_MEDIA = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA = "application/vnd.oci.image.index.v1+json"
GZIP_LEVEL = 9
CHUNK = 1 << 20


def _normalise(info: tarfile.TarInfo, epoch: int) -> tarfile.TarInfo:
    info.mtime = epoch
    info.uname = info.gname = ""
    return info


def write_layer_tar(rootfs: str, out, epoch: int) -> None:
    """Every entry under ``rootfs`` (not the root itself), sorted, as a tar stream.

    Hard links stay hard links (tarfile tracks inodes); device files are kept as
    they are, though build.sh leaves none."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(rootfs):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, rootfs)
            entries = sorted(dirnames + filenames)
            for name in entries:
                path = os.path.join(dirpath, name)
                arcname = name if rel_dir == "." else f"{rel_dir}/{name}"
                info = _normalise(tar.gettarinfo(path, arcname), epoch)
                if info.isreg():
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
            # os.walk does not descend into symlinked directories: nothing to skip.


class _Hashing:
    """A write-only file that hashes and counts what passes through it."""

    def __init__(self, sink):
        self.sink = sink
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.sink.write(data)

    def flush(self) -> None:
        self.sink.flush()

    @property
    def digest(self) -> str:
        return "sha256:" + self.sha.hexdigest()


def build_layer(rootfs: str, blob_path: str, epoch: int) -> tuple[dict, str]:
    """Write the gzipped layer to ``blob_path``; (its descriptor, its diff_id)."""
    with open(blob_path, "wb") as raw:
        compressed = _Hashing(raw)
        with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=0,
                           compresslevel=GZIP_LEVEL) as gz:
            uncompressed = _Hashing(gz)
            write_layer_tar(rootfs, uncompressed, epoch)
    return ({"mediaType": LAYER_MEDIA, "digest": compressed.digest, "size": compressed.size},
            uncompressed.digest)


def _json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _blob(blobs: dict[str, bytes], data: bytes, media_type: str) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def layout_files(config: dict, layer: dict, ref: str, arch: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(name -> bytes of oci-layout and index.json, digest -> bytes of config and manifest)."""
    blobs: dict[str, bytes] = {}
    config_desc = _blob(blobs, _json(config), CONFIG_MEDIA)
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST_MEDIA, "config": config_desc,
                "layers": [layer], "annotations": {
                    "org.opencontainers.image.created": config["created"]}}
    manifest_desc = _blob(blobs, _json(manifest), MANIFEST_MEDIA)
    manifest_desc["platform"] = {"architecture": arch, "os": "linux"}
    if arch == "arm64":
        manifest_desc["platform"]["variant"] = "v8"
    manifest_desc["annotations"] = {"io.containerd.image.name": ref,
                                    "org.opencontainers.image.ref.name": ref}
    index = {"schemaVersion": 2, "mediaType": INDEX_MEDIA, "manifests": [manifest_desc]}
    top = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": _json(index)}
    return top, blobs


def _entry(name: str, kind: bytes, size: int = 0, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode, info.mtime = kind, size, mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_archive(out: str, top: dict[str, bytes], blobs: dict[str, bytes], layer_path: str,
                  layer_digest: str) -> None:
    """The layout as a tar at ``out`` (through a temporary file and a rename)."""
    tmp = out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in ("blobs", "blobs/sha256"):
            tar.addfile(_entry(name, tarfile.DIRTYPE, mode=0o755))
        files = {f"blobs/sha256/{d.split(':', 1)[1]}": data for d, data in blobs.items()}
        layer_name = f"blobs/sha256/{layer_digest.split(':', 1)[1]}"
        for name in sorted([*files, layer_name]):
            if name == layer_name:
                with open(layer_path, "rb") as f:
                    tar.addfile(_entry(name, tarfile.REGTYPE, os.path.getsize(layer_path)), f)
            else:
                tar.addfile(_entry(name, tarfile.REGTYPE, len(files[name])), io.BytesIO(files[name]))
        for name in sorted(top):
            tar.addfile(_entry(name, tarfile.REGTYPE, len(top[name])), io.BytesIO(top[name]))
    os.replace(tmp, out)


def build(rootfs: str, out: str, arch: str, epoch: int, source: str = "", revision: str = "") -> str:
    """Write the archive; return the image reference it names."""
    ver = layout.version()
    ref = layout.image_ref(ver)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mokka-oci-", dir=os.path.dirname(os.path.abspath(out))) as tmp:
        layer_path = os.path.join(tmp, "layer.tar.gz")
        layer, diff_id = build_layer(rootfs, layer_path, epoch)
        config = layout.image_config(arch, epoch, layout.labels(ver, layout.created(epoch), source, revision),
                                     [diff_id])
        top, blobs = layout_files(config, layer, ref, arch)
        write_archive(out, top, blobs, layer_path, layer["digest"])
    return ref


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="oci_layout.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("rootfs")
    parser.add_argument("out")
    parser.add_argument("--arch", required=True, choices=sorted(layout.MACHINE))
    parser.add_argument("--epoch", required=True, type=int, help="SOURCE_DATE_EPOCH")
    parser.add_argument("--source", default="")
    parser.add_argument("--revision", default="")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.rootfs) or not stat.S_ISDIR(os.lstat(args.rootfs).st_mode):
        print(f"oci_layout.py: {args.rootfs}: not a directory (give the root filesystem to pack)",
              file=sys.stderr)
        return 1
    ref = build(args.rootfs, args.out, args.arch, args.epoch, args.source, args.revision)
    print(f"wrote {args.out} ({ref})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
