"""The mock libcuda.so.1 as built: x86_64 and aarch64 against glibc 2.17, exporting only
the driver API (cu*), every entry point cuGetProcAddress names, and the same bytes from
every build."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.native.test_exports import E_MACHINE, GLIBC_FLOOR, glibc_version, read_elf

# Builds the libraries again into a folder of its own.
pytestmark = pytest.mark.slow

BUILD = os.path.join(REPO, "native", "build.py")
ARCHES = ("x86_64", "aarch64")


def _build(out: str) -> dict[str, str]:
    done = subprocess.run([sys.executable, BUILD, "--quiet", "--arch", "all", "--out", out,
                           "--lib", "nvml", "--lib", "cuda"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {arch: os.path.join(out, arch, "libcuda.so.1") for arch in ARCHES}


@pytest.fixture(scope="module")
def libraries() -> dict[str, str]:
    """The work tree's build (build/native) for both machines, as MOKKA_ARCHES=all ./shivfile makes it."""
    return _build(os.path.join(REPO, "build", "native"))


@pytest.mark.parametrize("arch", ARCHES)
def test_an_elf_of_its_architecture_needing_no_glibc_newer_than_2_17(libraries, arch):
    elf = read_elf(libraries[arch])
    assert elf.machine == E_MACHINE[arch]
    needed = elf.needed_versions()
    assert any(glibc_version(v) for v in needed)
    assert sorted(v for v in needed if (glibc_version(v) or (0,)) > GLIBC_FLOOR) == []


@pytest.mark.parametrize("arch", ARCHES)
def test_exports_the_driver_api_and_nothing_else(libraries, arch):
    ours = read_elf(libraries[arch]).defined_dynamic_symbols()
    assert sorted(n for n in ours if not n.startswith("cu")) == []
    # what numba, cuda-bindings and a program linked with -lcuda find by name
    assert {"cuInit", "cuDriverGetVersion", "cuGetProcAddress", "cuGetProcAddress_v2", "cuDeviceGetCount",
            "cuDeviceGetUuid", "cuDeviceGetUuid_v2", "cuDeviceTotalMem_v2", "cuMemAlloc_v2", "cuMemFree_v2",
            "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2_ptds", "cuMemGetInfo_v2",
            "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxCreate_v2", "cuLaunchKernel",
            "cuLinkCreate_v2", "cuLinkAddData_v2", "cuLinkAddFile_v2", "cuLinkComplete", "cuLinkDestroy",
            "cuGetErrorString", "cuGetExportTable"} <= ours
    assert not read_elf(libraries[arch]).has_version_definitions()


def test_building_twice_gives_the_same_bytes(libraries, tmp_path):
    again = _build(str(tmp_path / "again"))

    def digest(path: str) -> str:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    assert {a: digest(p) for a, p in again.items()} == {a: digest(p) for a, p in libraries.items()}
