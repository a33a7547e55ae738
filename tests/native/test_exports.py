"""The built library's surface, read from the ELF files (nothing is loaded):

- it exports every name NVIDIA's real libnvidia-ml.so (550, fetched by
  .ci/fetch-runtime.sh from Debian non-free) exports, and every function of the
  pinned nvml.h; beyond those, only LATER_API; nothing but nvml* names, and no
  symbol versions of its own;
- the aarch64 build is an aarch64 ELF;
- neither build needs a GLIBC_ symbol version above 2.17;
- building twice gives the same bytes.

NVIDIA's library is only ever read here: loading it as root with no driver
creates /dev/nvidiactl on the host. Without the fetched peers the first test
skips, loudly, unless MOKKA_REQUIRE_RUNTIME=1 (CI), where it fails.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import struct
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.integration import runtime as rt

# Builds every architecture, twice (the same bytes).
pytestmark = pytest.mark.slow

BUILD = os.path.join(REPO, "native", "build.py")
ARCHES = ("x86_64", "aarch64")
E_MACHINE = {"x86_64": 62, "aarch64": 183}
GLIBC_FLOOR = (2, 17)

#: Functions of NVML releases newer than the pinned nvml.h and NVIDIA's 550 library, which
#: consumers built against a newer header call (our nvidia-smi's 580 report among them).
#: A name joins only with its own declaration in native/nvml and a test of its answers.
LATER_API = {
    "nvmlDeviceGetPlatformInfo",        # NVML 12.6 (560): the report's Platform Info block
    # NVML 13 (580): rows of a real board's report (native/nvml/api/board.c, tests/capture/)
    "nvmlDeviceGetPdi", "nvmlDeviceGetAddressingMode", "nvmlDeviceGetCapabilities",
    "nvmlDeviceGetRepairStatus", "nvmlDeviceGetUnrepairableMemoryFlag_v1",
    # NVML 12.9 and 13 calls DCGM 4.6 makes (native/nvml/api/nvml_newer.h, tests/native/test_nvml_newer.py),
    # and the unrepairable-memory flag by the name DCGM resolves
    "nvmlDeviceGetMarginTemperature", "nvmlSystemEventSetCreate", "nvmlSystemEventSetFree",
    "nvmlSystemRegisterEvents", "nvmlSystemEventSetWait", "nvmlDeviceGetUnrepairableMemoryFlag",
    "nvmlDeviceWorkloadPowerProfileGetProfilesInfo", "nvmlDeviceWorkloadPowerProfileGetCurrentProfiles",
    "nvmlDeviceWorkloadPowerProfileSetRequestedProfiles", "nvmlDeviceWorkloadPowerProfileClearRequestedProfiles",
    "nvmlDeviceWorkloadPowerProfileUpdateProfiles_v1", "nvmlDeviceReadWritePRM_v1", "nvmlDeviceReadPRMCounters_v1",
}
#: Mokka's own calls for its clients (native/nvml/api/mokka_private.h): where the node's files
#: are, which profile GPU a visible index is, the board values the mock CUDA driver reads,
#: the process records it keeps, the agent's sweep of the dead ones and of the strays,
#: where GPU instances go (the one placement rule, which compile plans boot layouts with), and
#: the setters' settings ctl reset clears, the ECC counts ctl ecc adds to.
PRIVATE_API = {"nvmlMokkaGetNodePath", "nvmlMokkaGetDeviceIdentity", "nvmlMokkaGetDeviceCudaValue",
               "nvmlMokkaSetProcessMemory", "nvmlMokkaReleaseProcess", "nvmlMokkaSweepProcessRecords",
               "nvmlMokkaResetDeviceSettings", "nvmlMokkaReadWholeErrorCounts",
               "nvmlMokkaProcessRecordsStray", "nvmlMokkaMigPlaceGpuInstances"}

SHT_DYNSYM = 11
SHT_GNU_VERDEF = 0x6FFFFFFD
SHT_GNU_VERNEED = 0x6FFFFFFE


# --------------------------------------------------------------------------- ELF


class Elf:
    """The few parts of a 64-bit little-endian ELF file these tests read."""

    def __init__(self, data: bytes):
        assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not ELF64 LE"
        self.data = data
        self.machine = struct.unpack_from("<H", data, 18)[0]
        shoff = struct.unpack_from("<Q", data, 40)[0]
        shentsize, shnum = struct.unpack_from("<HH", data, 58)
        self.sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                         for i in range(shnum)]

    def _by_type(self, sh_type: int):
        return [s for s in self.sections if s[1] == sh_type]

    def _string(self, strtab_index: int, offset: int) -> str:
        base = self.sections[strtab_index][4]
        end = self.data.index(b"\0", base + offset)
        return self.data[base + offset:end].decode()

    def defined_dynamic_symbols(self) -> set[str]:
        (dynsym,) = self._by_type(SHT_DYNSYM)
        _, _, _, _, offset, size, link, _, _, entsize = dynsym
        names = set()
        for pos in range(offset + entsize, offset + size, entsize):     # entry 0 is null
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", self.data, pos)
            if st_shndx != 0 and st_info >> 4 != 0:                     # defined, not local
                names.add(self._string(link, st_name))
        return names

    def has_version_definitions(self) -> bool:
        return bool(self._by_type(SHT_GNU_VERDEF))

    def needed_versions(self) -> set[str]:
        """Every version name the file needs from its libraries (GLIBC_2.3.2, ...)."""
        found = set()
        for _, _, _, _, offset, _, link, info, _, _ in self._by_type(SHT_GNU_VERNEED):
            pos = offset
            for _ in range(info):
                _, _, _, vn_aux, vn_next = struct.unpack_from("<HHIII", self.data, pos)
                aux = pos + vn_aux
                count = struct.unpack_from("<H", self.data, pos + 2)[0]
                for _ in range(count):
                    _, _, _, vna_name, vna_next = struct.unpack_from("<IHHII", self.data, aux)
                    found.add(self._string(link, vna_name))
                    aux += vna_next
                pos += vn_next
        return found


def read_elf(path: str) -> Elf:
    with open(path, "rb") as f:
        return Elf(f.read())


def glibc_version(name: str) -> tuple[int, ...] | None:
    if not name.startswith("GLIBC_") or not name[6:7].isdigit():
        return None
    return tuple(int(part) for part in name[6:].split("."))


# --------------------------------------------------------------------------- fixtures


def _build(out: str) -> dict[str, str]:
    proc = subprocess.run([sys.executable, BUILD, "--quiet", "--arch", "all", "--out", out],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"native/build.py failed:\n{proc.stderr}"
    return {arch: os.path.join(out, arch, "libnvidia-ml.so.1") for arch in ARCHES}


@pytest.fixture(scope="module")
def libraries() -> dict[str, str]:
    """The work tree's build (build/native) for both machines, as MOKKA_ARCHES=all ./shivfile makes it."""
    return _build(os.path.join(REPO, "build", "native"))


@pytest.fixture(scope="module")
def nvml_h_functions() -> set[str]:
    spec = importlib.util.spec_from_file_location(
        "mokka_gen_stubs_test", os.path.join(REPO, "native", "nvml", "gen_stubs.py"))
    gen_stubs = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gen_stubs
    spec.loader.exec_module(gen_stubs)
    build = importlib.util.spec_from_file_location("mokka_native_build_test", BUILD)
    build_mod = importlib.util.module_from_spec(build)
    build.loader.exec_module(build_mod)
    with open(build_mod.nvml_header(), encoding="utf-8") as f:
        return set(gen_stubs.parse_header(f.read()))


def _peer(key: str) -> str:
    env_file = rt.runtime_dir() / "paths.env"
    value = None
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            if line.startswith(key + "="):
                value = line.partition("=")[2].strip()
    if value and os.path.exists(value):
        return value
    reason = (f"NVIDIA'S PEERS NOT FETCHED: no {key} in {env_file}. Run `bash {rt.FETCH_SCRIPT}` "
              "to fetch nvidia-smi and libnvidia-ml1 (550) from Debian non-free")
    if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
        pytest.fail(reason)
    pytest.skip(f"{'!' * 20} {reason} {'!' * 20}")


@pytest.fixture(scope="module")
def real_nvml_names() -> set[str]:
    return read_elf(_peer("REAL_NVML_LIB")).defined_dynamic_symbols()


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("arch", ARCHES)
def test_exports_every_name_nvidias_550_library_exports(libraries, real_nvml_names, arch):
    assert len(real_nvml_names) > 300, "the real library's dynamic symbols were not read"
    ours = read_elf(libraries[arch]).defined_dynamic_symbols()
    assert sorted(real_nvml_names - ours) == []


@pytest.mark.parametrize("arch", ARCHES)
def test_exports_every_function_of_the_pinned_nvml_h(libraries, nvml_h_functions, arch):
    assert {"nvmlInit", "nvmlInit_v2", "nvmlErrorString", "nvmlDeviceGetCount_v2"} <= nvml_h_functions
    ours = read_elf(libraries[arch]).defined_dynamic_symbols()
    assert sorted(nvml_h_functions - ours) == []


@pytest.mark.parametrize("arch", ARCHES)
def test_exports_nothing_else_but_the_later_api(libraries, real_nvml_names, nvml_h_functions, arch):
    ours = read_elf(libraries[arch]).defined_dynamic_symbols()
    assert not LATER_API & (real_nvml_names | nvml_h_functions), "no longer later than the pins"
    assert sorted(ours - real_nvml_names - nvml_h_functions) == sorted(LATER_API | PRIVATE_API)


@pytest.mark.parametrize("arch", ARCHES)
def test_exports_only_nvml_names_and_no_symbol_versions(libraries, arch):
    elf = read_elf(libraries[arch])
    assert sorted(n for n in elf.defined_dynamic_symbols() if not n.startswith("nvml")) == []
    assert not elf.has_version_definitions(), "NVIDIA's library defines no symbol versions"


@pytest.mark.parametrize("arch", ARCHES)
def test_build_is_an_elf_of_its_architecture(libraries, arch):
    assert read_elf(libraries[arch]).machine == E_MACHINE[arch]


@pytest.mark.parametrize("arch", ARCHES)
def test_needs_no_glibc_newer_than_2_17(libraries, arch):
    needed = read_elf(libraries[arch]).needed_versions()
    assert any(glibc_version(v) for v in needed), f"no GLIBC_ versions read: {needed}"
    too_new = sorted(v for v in needed if (glibc_version(v) or (0,)) > GLIBC_FLOOR)
    assert too_new == []


def test_building_twice_gives_the_same_bytes(libraries, tmp_path):
    again = _build(str(tmp_path / "again"))      # another folder: no path may leak in

    def digest(path: str) -> str:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    assert {a: digest(p) for a, p in again.items()} == {a: digest(p) for a, p in libraries.items()}
