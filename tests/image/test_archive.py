"""What image/build.sh's archives hold, read from the archive itself: the arm64 one
cannot run here, so its config and every binary's ELF machine are checked instead.
Both: the zipapp's site-packages unpacked where shiv will look for them (so nothing
is written at start on a read-only root), bytecode that needs no rewriting and names
image paths, no package manager state, the users."""

from __future__ import annotations

import functools
import gzip
import io
import json
import marshal
import tarfile
import zipfile

import pytest

from mokka.core import elf

MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}
NEEDED = ("usr/local/bin/mokka", "usr/lib/mokka/nvidia-smi", "usr/bin/env", "usr/bin/python3",
          "usr/bin/python3.11", "usr/bin/patchelf", "usr/bin/systemctl", "usr/sbin/ibstat",
          "usr/bin/ibv_devinfo", "usr/bin/dash")


class Archive:
    def __init__(self, path: str):
        with tarfile.open(path) as outer:
            files = {m.name: outer.extractfile(m).read() for m in outer.getmembers() if m.isfile()}
        index = json.loads(files["index.json"])
        self.index_entry = index["manifests"][0]
        manifest = json.loads(files["blobs/sha256/" + self.index_entry["digest"].split(":")[1]])
        self.config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
        layer = gzip.decompress(files["blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]])
        self.entries: dict[str, tarfile.TarInfo] = {}
        self.data: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
            for member in tar.getmembers():
                self.entries[member.name] = member
                if member.isfile():
                    self.data[member.name] = tar.extractfile(member).read()


@functools.lru_cache(maxsize=2)
def archive(path: str) -> Archive:
    return Archive(path)


@pytest.fixture(params=["native", "arm64"])
def image(request):
    built = request.getfixturevalue("mokka_image" if request.param == "native" else "mokka_image_arm64")
    return built, archive(built.path)


def test_config_and_index_name_the_architecture(image):
    built, arc = image
    assert arc.config["architecture"] == built.arch
    assert arc.index_entry["platform"]["architecture"] == built.arch
    assert arc.index_entry["annotations"]["io.containerd.image.name"] == built.ref


def test_every_binary_is_for_the_images_machine(image):
    built, arc = image
    want = MACHINE[built.arch]
    other = {m for m in MACHINE.values() if m != want}.pop()
    elves = {name: data for name, data in arc.data.items() if data[:4] == b"\x7fELF"}
    assert len(elves) > 100
    wrong = sorted(name for name, data in elves.items() if elf.machine(data) != want
                   # the zipapp carries the mock libraries of both machines; the agent picks its own
                   and f"/mokka/_native/{other}/" not in name)
    assert wrong == []
    for name in NEEDED:
        assert name in arc.data or arc.entries[name].issym(), name
    assert elf.machine(arc.data["usr/lib/mokka/nvidia-smi"]) == want
    yaml_loader = [n for n in elves if "/site-packages/yaml/_yaml.cpython-311-" in n]
    assert yaml_loader and all(f"-{want}-linux-gnu.so" in n for n in yaml_loader)


def test_the_zipapp_is_unpacked_where_shiv_looks(image):
    _, arc = image
    with zipfile.ZipFile(io.BytesIO(arc.data["usr/local/bin/mokka"])) as app:
        build_id = json.loads(app.read("environment.json"))["build_id"]
        packed = {n.removeprefix("site-packages/") for n in app.namelist()
                  if n.startswith("site-packages/") and not n.endswith("/")}
    env = dict(e.split("=", 1) for e in arc.config["config"]["Env"])
    unpacked = f"{env['SHIV_ROOT'].strip('/')}/mokka_{build_id}/site-packages/"
    assert {n.removeprefix(unpacked) for n in arc.data if n.startswith(unpacked)} >= packed
    for link in ("nri-plugin", "nvidia-smi", "check-fabric", "mock-ib", "fabricmanager", "ctl"):
        assert arc.entries[f"usr/local/bin/{link}"].linkname == "mokka"


def test_bytecode_is_unchecked_and_names_image_paths(image):
    _, arc = image
    pycs = {n: d for n, d in arc.data.items() if n.endswith(".cpython-311.pyc")}
    assert any(n.startswith("usr/lib/python3.11/") for n in pycs)
    assert any("/site-packages/mokka/" in n for n in pycs)
    # flags 0b01: a hash-based pyc never checked against its source (mtimes do not matter).
    assert {int.from_bytes(d[4:8], "little") for d in pycs.values()} == {1}
    for name in [n for n in pycs if n.endswith(("/os.cpython-311.pyc", "/main.cpython-311.pyc"))]:
        code = marshal.loads(pycs[name][16:])
        assert code.co_filename.startswith("/usr/"), (name, code.co_filename)


def test_no_package_state_devices_or_build_host_files(image):
    _, arc = image
    for prefix in ("var/lib/dpkg/", "var/lib/apt/", "var/cache/apt/", "etc/apt/", "usr/share/doc/",
                   "usr/share/perl/", "etc/hostname", "etc/resolv.conf"):
        assert not [n for n in arc.entries if n.startswith(prefix)], prefix
    assert not [n for n, e in arc.entries.items() if e.ischr() or e.isblk()]
    assert arc.entries["tmp"].mode == 0o1777


def test_root_and_nonroot_users(image):
    _, arc = image
    passwd = arc.data["etc/passwd"].decode().splitlines()
    assert passwd[0].startswith("root:x:0:0:")
    assert "nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin" in passwd
    assert "nonroot:x:65532:" in arc.data["etc/group"].decode().splitlines()
    home = arc.entries["home/nonroot"]
    assert (home.uid, home.gid) == (65532, 65532)
