"""image/oci_layout.py on a small tree: what ctr import and the kubelet read from the
archive (index name, platform, the config's entrypoint, env, labels, user), and the
bits reproducibility rests on (mtimes, owners, order, gzip header)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from tests.conftest import REPO

WRITER = os.path.join(REPO, "image", "oci_layout.py")
EPOCH = 1_700_000_000


def tree(base) -> str:
    root = base / "rootfs"
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "b").write_text("bee\n")
    (root / "usr" / "bin" / "a").write_text("a\n")
    os.chmod(root / "usr" / "bin" / "a", 0o755)
    os.link(root / "usr" / "bin" / "a", root / "usr" / "bin" / "a2")
    os.symlink("usr/bin", root / "bin")
    (root / "home" / "nonroot").mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(root / "home" / "nonroot", 65532, 65532)
    return str(root)


def write(rootfs: str, out: str, arch: str = "amd64", *extra: str) -> bytes:
    done = subprocess.run([sys.executable, WRITER, rootfs, out, "--arch", arch, "--epoch", str(EPOCH),
                           *extra], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open(out, "rb") as f:
        return f.read()


def members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def blob(files: dict[str, bytes], digest: str) -> bytes:
    data = files["blobs/sha256/" + digest.split(":", 1)[1]]
    assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
    return data


def parts(archive: bytes):
    files = members(archive)
    index = json.loads(files["index.json"])
    manifest = json.loads(blob(files, index["manifests"][0]["digest"]))
    config = json.loads(blob(files, manifest["config"]["digest"]))
    layer = blob(files, manifest["layers"][0]["digest"])
    return files, index, manifest, config, layer


@pytest.fixture
def built(tmp_path):
    return write(tree(tmp_path), str(tmp_path / "out" / "image.tar"), "amd64",
                 "--source", "https://example.invalid/mokka", "--revision", "abc123")


def test_the_same_tree_gives_the_same_bytes(tmp_path, built):
    again = write(tree(tmp_path / "again"), str(tmp_path / "again.tar"), "amd64",
                  "--source", "https://example.invalid/mokka", "--revision", "abc123")
    assert hashlib.sha256(again).hexdigest() == hashlib.sha256(built).hexdigest()


def test_the_index_names_the_image_for_containerd_and_oci_tools(built):
    files, index, manifest, _, _ = parts(built)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    (entry,) = index["manifests"]
    assert entry["annotations"] == {"io.containerd.image.name": "docker.io/library/mokka:0.1.0",
                                    "org.opencontainers.image.ref.name": "docker.io/library/mokka:0.1.0"}
    assert entry["platform"] == {"architecture": "amd64", "os": "linux"}
    assert entry["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert manifest["layers"][0]["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"


def test_the_config_starts_the_agent_as_root_with_the_staging_env(built):
    _, _, _, config, layer = parts(built)
    assert config["architecture"] == "amd64" and config["os"] == "linux"
    run = config["config"]
    assert run["Entrypoint"] == ["/usr/local/bin/mokka"]
    assert run["Cmd"] == ["node-agent"]
    assert not run.get("User")          # root: the agent is privileged
    env = dict(e.split("=", 1) for e in run["Env"])
    assert env["MOKKA_AGENT_NVIDIA_SMI"] == "/usr/lib/mokka/nvidia-smi"
    assert env["MOKKA_AGENT_IB_TOOLS"] == "/"
    assert env["SHIV_ROOT"] == "/usr/local/lib/mokka"
    assert "/usr/local/bin" in env["PATH"].split(":")
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(gzip.decompress(layer)).hexdigest()]


def test_labels_carry_version_title_source_revision_and_the_epoch(built):
    _, _, _, config, _ = parts(built)
    assert config["config"]["Labels"] == {
        "org.opencontainers.image.created": "2023-11-14T22:13:20Z",
        "org.opencontainers.image.revision": "abc123",
        "org.opencontainers.image.source": "https://example.invalid/mokka",
        "org.opencontainers.image.title": "mokka",
        "org.opencontainers.image.version": "0.1.0",
    }
    assert config["created"] == "2023-11-14T22:13:20Z"


def test_no_source_or_revision_leaves_those_labels_out(tmp_path):
    _, _, _, config, _ = parts(write(tree(tmp_path), str(tmp_path / "x.tar")))
    assert "org.opencontainers.image.source" not in config["config"]["Labels"]
    assert "org.opencontainers.image.revision" not in config["config"]["Labels"]


def test_layer_entries_are_sorted_stamped_with_the_epoch_and_numbered_owners(built):
    _, _, _, _, layer = parts(built)
    assert layer[3] & 0x08 == 0, "gzip header names a file"
    assert layer[4:8] == b"\0\0\0\0", "gzip header carries a time"
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        entries = tar.getmembers()
    assert [e.name for e in entries] == ["bin", "home", "usr", "home/nonroot", "usr/bin",
                                         "usr/bin/a", "usr/bin/a2", "usr/bin/b"]
    assert {e.mtime for e in entries} == {EPOCH}
    assert {(e.uname, e.gname) for e in entries} == {("", "")}
    by = {e.name: e for e in entries}
    assert by["bin"].issym() and by["bin"].linkname == "usr/bin"
    assert by["usr/bin/a2"].islnk() and by["usr/bin/a2"].linkname == "usr/bin/a"
    assert by["usr/bin/a"].mode == 0o755 and by["usr/bin/b"].mode == 0o644
    if os.geteuid() == 0:
        assert (by["home/nonroot"].uid, by["home/nonroot"].gid) == (65532, 65532)


def test_outer_tar_entries_carry_no_time(built):
    with tarfile.open(fileobj=io.BytesIO(built)) as tar:
        assert {m.mtime for m in tar.getmembers()} == {0}


def test_arm64_is_named_in_platform_and_config(tmp_path):
    _, index, _, config, _ = parts(write(tree(tmp_path), str(tmp_path / "arm.tar"), "arm64"))
    assert index["manifests"][0]["platform"] == {"architecture": "arm64", "os": "linux", "variant": "v8"}
    assert config["architecture"] == "arm64"


def test_a_missing_rootfs_is_one_line_and_exit_1(tmp_path):
    done = subprocess.run([sys.executable, WRITER, str(tmp_path / "nope"), str(tmp_path / "o.tar"),
                           "--arch", "amd64", "--epoch", "0"], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"oci_layout.py: {tmp_path / 'nope'}: not a directory (give the root filesystem to pack)"]
    assert not os.path.exists(tmp_path / "o.tar")
