"""The built image, once per session, for every test that needs it.

    mokka_image        (session)  MokkaImage(path, ref, arch): image/build.sh's archive
                                  of this tree for this machine (amd64 in CI)
    mokka_image_arm64  (session)  the same for arm64 (not runnable here: inspect only)

tests/conftest.py imports both, so tests anywhere (tests/integration too) just name
them. An archive is cached in $MOKKA_IMAGE_CACHE (default ~/.cache/mokka-image) under
a key of everything the build reads (image/, mokka/, native/, shivfile, pyproject.toml,
.ci/private-apt.sh); MOKKA_IMAGE=PATH uses a prebuilt archive for this machine instead.

The build needs root, mmdebstrap and the network (the Debian mirror; PyPI for arm64):
where it cannot run the fixtures skip, unless MOKKA_REQUIRE_RUNTIME=1 (CI), where
they fail.
"""

from __future__ import annotations

import dataclasses
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess

import pytest

from tests.conftest import REPO

BUILD = os.path.join(REPO, "image", "build.sh")
INPUTS = ("image", "mokka", "native", "shivfile", "pyproject.toml", ".ci/private-apt.sh")
NATIVE = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


def image_ref() -> str:
    """docker.io/library/mokka:<pyproject version>, as the archive's index names it."""
    import tomllib
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return "docker.io/library/mokka:" + tomllib.load(f)["project"]["version"]


@dataclasses.dataclass(frozen=True)
class MokkaImage:
    path: str   # the OCI archive (ctr images import PATH)
    ref: str    # the name its index gives it
    arch: str


def cache_dir() -> str:
    return os.environ.get("MOKKA_IMAGE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                               "mokka-image")


def inputs_key() -> str:
    """sha256 over the path and bytes of every file the build reads from this tree."""
    digest = hashlib.sha256()
    for top in INPUTS:
        path = os.path.join(REPO, top)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(d, f) for d, dirs, fs in os.walk(path)
            for f in fs if "__pycache__" not in d and not f.endswith((".pyc", ".tmp")))
        for name in files:
            digest.update(os.path.relpath(name, REPO).encode() + b"\0")
            with open(name, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()[:16]


def _cannot_build() -> str | None:
    if os.geteuid() != 0:
        return "image/build.sh needs root"
    if shutil.which("mmdebstrap") is None:
        return "image/build.sh needs mmdebstrap (apt-get install mmdebstrap; .ci/run does)"
    return None


def unavailable(reason: str):
    """What the image tests need is missing: a failure under MOKKA_REQUIRE_RUNTIME=1,
    else a loud skip."""
    if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
        pytest.fail(f"the image cannot be built: {reason}")
    pytest.skip(f"!!!!! IMAGE NOT BUILT: {reason} !!!!!")


def build(arch: str) -> MokkaImage:
    """The cached archive for this tree and arch, building it first if needed."""
    why = _cannot_build()
    if why:
        unavailable(why)
    os.makedirs(cache_dir(), exist_ok=True)
    name = f"mokka-image-{arch}-"
    path = os.path.join(cache_dir(), f"{name}{inputs_key()}.tar")
    # One build at a time, whichever session asks: the others wait and reuse it.
    with open(os.path.join(cache_dir(), f".{arch}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(path):
            done = subprocess.run(["bash", BUILD, path, arch], capture_output=True, text=True)
            if done.returncode != 0:
                tail = (done.stdout + done.stderr)[-4000:]
                if "Could not resolve" in tail or "Failed to fetch" in tail or "Temporary failure" in tail:
                    unavailable(f"no network to the Debian mirror:\n{tail}")
                raise AssertionError(f"image/build.sh {arch} failed ({done.returncode}):\n{tail}")
            for old in glob.glob(os.path.join(cache_dir(), f"{name}*.tar")):
                if old != path:
                    os.unlink(old)
    return MokkaImage(path, image_ref(), arch)


@pytest.fixture(scope="session")
def mokka_image() -> MokkaImage:
    prebuilt = os.environ.get("MOKKA_IMAGE")
    if prebuilt:
        return MokkaImage(prebuilt, image_ref(), NATIVE)
    return build(NATIVE)


@pytest.fixture(scope="session")
def mokka_image_arm64() -> MokkaImage:
    return build("arm64")
