"""The arm64 image runs, under emulation: its own Python starts the agent, which stages the
aarch64 mock NVML library, and NVIDIA's arm64 nvidia-smi 550 from the same image lists the
profile's GPUs through it. (kind on Apple silicon runs this image natively.)

qemu-user-static (Debian; .ci/run installs it) runs the aarch64 binaries: the kernel hands
them to it through a binfmt_misc entry with the F flag (the interpreter is opened at
registration, so it works inside a chroot). The test registers the entry only if the host has
none for aarch64, and mounts binfmt_misc only if it is not mounted; both are undone after,
so the host is left as it was found. The image's tree is unpacked into a scratch dir and
entered with chroot, with /proc and a read-only /dev bound in.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile

import pytest

from mokka.core import names
from tests.compiled import state_of
from tests.image.fixtures import unavailable

QEMU = "/usr/bin/qemu-aarch64-static"
BINFMT = "/proc/sys/fs/binfmt_misc"
ENTRY = "mokka-qemu-aarch64"
# The ELF header of an aarch64 executable, and what of it must match (binfmt_misc's format).
MAGIC = r"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"
MASK = r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"
GPUS = 8          # gb300, the image's default profile


def aarch64_handled() -> bool:
    """Does some binfmt_misc entry already run aarch64 executables?"""
    for name in os.listdir(BINFMT):
        if name in ("register", "status"):
            continue
        with open(os.path.join(BINFMT, name)) as f:
            text = f.read()
        if "enabled" in text and "magic 7f454c460201010000000000000000000200b700" in text:
            return True
    return False


@contextlib.contextmanager
def aarch64_emulation():
    if not os.path.exists(QEMU):
        unavailable(f"{QEMU} is missing: apt-get install qemu-user-static (.ci/run does)")
    mounted = False
    if not os.path.exists(os.path.join(BINFMT, "register")):
        done = subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT],
                              capture_output=True, text=True)
        if done.returncode != 0:
            unavailable(f"binfmt_misc cannot be mounted here: {done.stderr.strip()}")
        mounted = True
    registered = False
    try:
        if not aarch64_handled():
            with open(os.path.join(BINFMT, "register"), "w") as f:
                f.write(f":{ENTRY}:M::{MAGIC}:{MASK}:{QEMU}:F")
            registered = True
        yield
    finally:
        if registered:
            with open(os.path.join(BINFMT, ENTRY), "w") as f:
                f.write("-1")
        if mounted:
            subprocess.run(["umount", BINFMT], check=False)


def unpack(archive: str, dest: str) -> dict[str, str]:
    """The image's one layer, as a container runtime would unpack it; its config's Env."""
    with tarfile.open(archive) as outer:
        index = json.load(outer.extractfile("index.json"))
        digest = index["manifests"][0]["digest"].split(":")[1]
        manifest = json.load(outer.extractfile(f"blobs/sha256/{digest}"))
        (layer,) = manifest["layers"]
        blob = outer.extractfile(f"blobs/sha256/{layer['digest'].split(':')[1]}").read()
        config = json.load(outer.extractfile(f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"))
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        tar.extractall(dest, numeric_owner=True)
    return dict(item.split("=", 1) for item in config["config"]["Env"])


def mounts_under(path: str) -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(path.rstrip("/") + "/")]


@pytest.fixture
def arm64_root(mokka_image_arm64, tmp_path):
    root = str(tmp_path / "rootfs")
    env = unpack(mokka_image_arm64.path, root)
    for d in ("proc", "dev", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", os.path.join(root, "proc")], check=True)
    try:
        subprocess.run(["mount", "--bind", "/dev", os.path.join(root, "dev")], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", os.path.join(root, "dev")], check=True)
        with aarch64_emulation():
            yield root, env
    finally:
        for mnt in sorted(mounts_under(root), key=len, reverse=True):
            subprocess.run(["umount", "-l", mnt], check=False)


def chroot(root: str, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    # The host's chroot (the environment below is the one inside the image).
    return subprocess.run([shutil.which("chroot") or "/usr/sbin/chroot", root, *argv], capture_output=True, text=True, env=env, timeout=600)


def test_the_arm64_image_stages_a_node_that_nvidia_smi_lists(arm64_root):
    # The image's own environment, as a runtime would give it (SHIV_ROOT, the nvidia-smi
    # and IB tools the agent stages).
    root, env = arm64_root
    assert env["MOKKA_AGENT_NVIDIA_SMI"] == "/usr/lib/mokka/nvidia-smi"
    python = chroot(root, env, "/usr/bin/python3", "-c", "import platform; print(platform.machine())")
    assert python.stdout.strip() == "aarch64", python
    agent = ("/usr/local/bin/mokka", "node-agent", "--host-root", "/tmp/node", "--health-addr", "",
             "--log-format", "plain")
    staged = chroot(root, env, *agent, "--once")
    assert staged.returncode == 0, staged.stderr[-3000:]
    overlay = "/tmp/node" + names.OVERLAY_HOST_PATH
    try:
        lib = os.path.join(root, overlay.lstrip("/"), "driver/usr/lib64")
        libs = [n for n in os.listdir(lib) if n.startswith("libnvidia-ml.so.") and not os.path.islink(os.path.join(lib, n))]
        with open(os.path.join(lib, libs[0]), "rb") as f:
            header = f.read(20)
        assert header[18:20] == b"\xb7\x00", "the staged library is not an aarch64 ELF"
        uuids = [g["uuid"] for g in state_of(os.path.join(root, overlay.lstrip("/"), "driver/config",
                                                          names.PROFILE_FILE))["gpus"]]
        listed = chroot(root, env, f"{overlay}/driver/usr/bin/nvidia-smi", "-L")
        assert listed.returncode == 0, listed
        assert listed.stdout.splitlines() == [f"GPU {i}: NVIDIA GB300 NVL (UUID: {u})"
                                              for i, u in enumerate(uuids)]
        assert len(uuids) == GPUS
    finally:
        teardown = chroot(root, env, *agent, "--teardown")
    assert teardown.returncode == 0, teardown.stderr[-3000:]
    assert mounts_under(os.path.join(root, "tmp")) == []
