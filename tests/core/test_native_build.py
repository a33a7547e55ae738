"""The native build's pins and packaging: native/requirements.txt is what
pyproject's [test] extra installs, gen_stubs reads nvml.h's shapes, and the
zipapp carries the libraries of this machine, or of both with MOKKA_ARCHES=all."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
import zipfile

import pytest

from tests.conftest import REPO

REQUIREMENTS = os.path.join(REPO, "native", "requirements.txt")


def _pins(lines) -> set[str]:
    return {line.split("#", 1)[0].strip() for line in lines} - {""}


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_build_pins_in_pyproject_equal_native_requirements():
    with open(REQUIREMENTS, encoding="utf-8") as f:
        build_pins = _pins(f)
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        test_extra = _pins(tomllib.load(f)["project"]["optional-dependencies"]["test"])
    assert build_pins == {"shiv==1.0.8", "ziglang==0.14.1", "nvidia-nvml-dev-cu12==12.4.127",
                          "nvidia-cuda-runtime-cu12==12.4.127"}
    assert build_pins <= test_extra


@pytest.fixture(scope="module")
def gen_stubs():
    return _load("mokka_gen_stubs_unit", os.path.join(REPO, "native", "nvml", "gen_stubs.py"))


HEADER = """
#ifndef GUARD
#define GUARD
#if defined _WINDOWS
    #define DECLDIR __declspec(dllexport)
#else
    #define DECLDIR
#endif
#ifndef NVML_NO_UNVERSIONED_FUNC_DEFS
    #define nvmlInit nvmlInit_v2
#endif
/** docs mentioning nvmlFake(void); */
nvmlReturn_t DECLDIR nvmlInit_v2(void);
const DECLDIR char* nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t DECLDIR nvmlDeviceGetThing(nvmlDevice_t device,
                                        unsigned int *count,   // trailing comment
                                        char *name);
#ifdef NVML_NO_UNVERSIONED_FUNC_DEFS
nvmlReturn_t DECLDIR nvmlInit(void);
#endif
#if defined(SOMETHING_ELSE)
nvmlReturn_t DECLDIR nvmlHidden(void);
#endif
#endif
"""


def test_gen_stubs_reads_every_declaration_the_build_compiles(gen_stubs):
    found = gen_stubs.parse_header(HEADER)
    assert sorted(found) == ["nvmlDeviceGetThing", "nvmlErrorString", "nvmlInit", "nvmlInit_v2"]
    assert found["nvmlDeviceGetThing"].prototype == (
        "nvmlReturn_t DECLDIR nvmlDeviceGetThing(nvmlDevice_t device, unsigned int *count, char *name)")
    assert found["nvmlErrorString"].returns == "const DECLDIR char*"


def test_gen_stubs_skips_hand_written_definitions_at_column_zero(gen_stubs, tmp_path):
    source = tmp_path / "x.c"
    source.write_text("const DECLDIR char* nvmlErrorString(nvmlReturn_t result)\n{ return 0; }\n"
                      "nvmlReturn_t DECLDIR nvmlInit_v2(void)\n{ return 0; }\n"
                      "    nvmlReturn_t DECLDIR nvmlInit(void);   /* indented: a declaration */\n")
    written = gen_stubs.handwritten([str(source)])
    assert written == {"nvmlErrorString", "nvmlInit_v2"}
    text = gen_stubs.render(gen_stubs.parse_header(HEADER), written)
    assert "nvmlReturn_t DECLDIR nvmlInit(void)\n{" in text
    assert "nvmlInit_v2(void)\n{" not in text and "nvmlErrorString" not in text
    assert "nvmlGetBlacklistDeviceCount(unsigned int *deviceCount)\n{" in text


HOST = os.uname().machine
OTHER = {"x86_64": "aarch64", "aarch64": "x86_64"}[HOST]
LIBRARY_FILES = ("libnvidia-ml.so.1", "libcuda.so.1", "libibmockumad.so.1", "libibmockverbs.so.1",
                 "libibmocksys.so.1", "libmockfs.so.1", "nvml-mock-proc-hook", "nvml-mock-modprobe")


def _shiv(out, *args: str, arches: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MOKKA_ARCHES"}
    if arches is not None:
        env["MOKKA_ARCHES"] = arches
    return subprocess.run([os.path.join(REPO, "shivfile"), *args, str(out)], env=env,
                          capture_output=True, text=True)


def _carried(zipapp: str) -> dict[str, set[str]]:
    with zipfile.ZipFile(zipapp) as z:
        names = [n.split("/")[3:] for n in z.namelist() if n.startswith("site-packages/mokka/_native/")]
    out: dict[str, set[str]] = {}
    for parts in names:
        if len(parts) == 2 and parts[1]:
            out.setdefault(parts[0], set()).add(parts[1])
    return out


def test_the_zipapp_carries_every_library_for_this_machine_only_by_default(zipapp):
    assert _carried(zipapp) == {HOST: set(LIBRARY_FILES)}


def test_mokka_arches_all_carries_every_library_for_both_machines(tmp_path):
    done = _shiv(tmp_path / "mokka", "--quiet", arches="all")
    assert done.returncode == 0, done.stderr
    assert _carried(str(tmp_path / "mokka")) == {"x86_64": set(LIBRARY_FILES), "aarch64": set(LIBRARY_FILES)}


def test_progress_lines_name_each_library_and_step_unless_quiet(tmp_path):
    loud = _shiv(tmp_path / "loud")
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    assert f"native: for {HOST} only (MOKKA_ARCHES=all builds x86_64 and aarch64)" in lines
    for file in LIBRARY_FILES:      # built now, or kept from an earlier build
        assert (f"native: building {file} ({HOST})..." in lines
                or "native: 8 up to date (inputs unchanged)" in lines), lines
    assert any(line.startswith("zipapp: packing ") for line in lines), lines
    assert not [line for line in lines if OTHER in line and "MOKKA_ARCHES" not in line]
    quiet = _shiv(tmp_path / "quiet", "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "" and quiet.stdout == ""


def test_native_build_names_each_library_as_it_starts_and_finishes(tmp_path):
    build = os.path.join(REPO, "native", "build.py")
    done = subprocess.run([sys.executable, build, "--out", str(tmp_path), "--lib", "mockfs"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[1] == f"native: building libmockfs.so.1 ({HOST})..."
    assert lines[2].startswith(f"native: built libmockfs.so.1 ({HOST}) in ")
    again = subprocess.run([sys.executable, build, "--out", str(tmp_path), "--lib", "mockfs", "--quiet"],
                           capture_output=True, text=True)
    assert again.returncode == 0 and again.stderr == ""
    kept = subprocess.run([sys.executable, build, "--out", str(tmp_path), "--lib", "mockfs"],
                          capture_output=True, text=True)
    assert "native: 1 up to date (inputs unchanged)" in kept.stderr.splitlines()


def test_an_unknown_mokka_arches_is_one_line_naming_it(tmp_path):
    done = _shiv(tmp_path / "mokka", "--quiet", arches="arm")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "native/build.py: MOKKA_ARCHES=arm: use host (the default: this machine's), all, "
        "or one of x86_64, aarch64"]


def test_a_zipapp_without_this_machines_libraries_says_so_in_one_line(tmp_path):
    done = _shiv(tmp_path / "mokka", "--quiet", arches=OTHER)
    assert done.returncode == 0, done.stderr
    assert _carried(str(tmp_path / "mokka")) == {OTHER: set(LIBRARY_FILES)}
    root = tmp_path / "root"
    root.mkdir()
    agent = subprocess.run([str(tmp_path / "mokka"), "node-agent", "--once", "--host-root", str(root),
                            "--health-addr", ""], capture_output=True, text=True,
                           env={**os.environ, "SHIV_ROOT": str(tmp_path / "shiv")})
    assert agent.returncode != 0
    assert agent.stderr.strip().splitlines() == [
        f"node-agent: this Mokka carries native libraries for {OTHER} only, not for {HOST} "
        f"(this machine): build it on a {HOST} machine, or with MOKKA_ARCHES=all ./shivfile"]
    assert os.listdir(root) == []


def test_build_table_names_every_library_by_its_soname_and_rejects_unknown_names(tmp_path):
    build = _load("mokka_native_build_unit", os.path.join(REPO, "native", "build.py"))
    assert build.LIBRARIES["nvml"].file == "libnvidia-ml.so.1"
    for lib in build.LIBRARIES.values():
        assert build.sources(lib), lib.file
    with pytest.raises(build.BuildError, match="unknown library nope"):
        build.build(str(tmp_path), ["x86_64"], libraries=["nope"])


# --------------------------------------------------------------------------- the getter table

GETTER_HEADER = """
nvmlReturn_t DECLDIR nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);
nvmlReturn_t DECLDIR nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber, unsigned int length);
nvmlReturn_t DECLDIR nvmlDeviceGetGspFirmwareVersion(nvmlDevice_t device, char *version);
nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci);
"""
MACROS = {"K_MINOR_NUMBER": "minor_number", "K_BOARD_PART_NUMBER": "board_part_number",
          "K_GSP_FIRMWARE_VERSION": "gsp_firmware.version"}
MINOR = "nvmlReturn_t DECLDIR nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)"
PART = ("nvmlReturn_t DECLDIR nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char *partNumber, "
        "unsigned int length)")
GSP = "nvmlReturn_t DECLDIR nvmlDeviceGetGspFirmwareVersion(nvmlDevice_t device, char *version)"
PCI = "nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)"


@pytest.fixture(scope="module")
def gen_getters():
    return _load("mokka_gen_getters_unit", os.path.join(REPO, "native", "nvml", "gen_getters.py"))


def _getter(gen_getters, prototype, shape, key):
    return gen_getters.Getter(gen_getters._NAME.search(prototype).group(1), prototype, shape, key)


def test_gen_getters_writes_nvml_h_prototype_and_one_call_of_api_c(gen_stubs, gen_getters):
    rows = [_getter(gen_getters, MINOR, "u32", "minor_number"),
            _getter(gen_getters, PART, "string", "board_part_number"),
            _getter(gen_getters, GSP, "string[NVML_GSP_FIRMWARE_VERSION_BUF_SIZE]", "gsp_firmware.version")]
    text = gen_getters.render(gen_stubs.parse_header(GETTER_HEADER), rows, MACROS, set())
    assert (f"{MINOR}\n{{\n    return api_u32(device, K_MINOR_NUMBER, minorNumber);\n}}\n") in text
    # the row's "char *partNumber" is nvml.h's "char* partNumber", which the output keeps
    assert ("nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber, unsigned int length)\n{\n"
            "    return api_string(device, K_BOARD_PART_NUMBER, partNumber, length);\n}\n") in text
    assert ("    return api_string(device, K_GSP_FIRMWARE_VERSION, version, "
            "NVML_GSP_FIRMWARE_VERSION_BUF_SIZE);\n") in text


@pytest.mark.parametrize("prototype, shape, key, written, message", [
    (MINOR.replace("MinorNumber(", "Nope("), "u32", "minor_number", set(),
     "nvmlDeviceGetNope is not a function of nvml.h"),
    (MINOR.replace("unsigned int *", "unsigned long long *"), "u64", "minor_number", set(),
     "nvml.h declares"),
    (PCI, "u32", "minor_number", set(), r"shape u32 takes \(nvmlDevice_t device, unsigned int \*…\)"),
    (MINOR, "u16", "minor_number", set(), "unknown shape 'u16'"),
    (MINOR, "u32", "minor_numbr", set(), "'minor_numbr' is not a GPU key of mokka/engine/statekeys.py"),
    (MINOR, "u32", "minor_number", {"nvmlDeviceGetMinorNumber"}, "by hand in native/nvml/.* too"),
], ids=["not in nvml.h", "another prototype", "parameters not the shape's", "unknown shape", "unknown key",
        "also hand-written"])
def test_gen_getters_refuses_a_row_and_names_it(gen_stubs, gen_getters, prototype, shape, key, written,
                                                 message):
    rows = [_getter(gen_getters, prototype, shape, key)]
    with pytest.raises(gen_getters.TableError, match=message):
        gen_getters.render(gen_stubs.parse_header(GETTER_HEADER), rows, MACROS, written)


def test_gen_getters_refuses_a_function_listed_twice(gen_stubs, gen_getters):
    rows = [_getter(gen_getters, MINOR, "u32", "minor_number")] * 2
    with pytest.raises(gen_getters.TableError, match="nvmlDeviceGetMinorNumber is defined twice"):
        gen_getters.render(gen_stubs.parse_header(GETTER_HEADER), rows, MACROS, set())


def test_the_getter_table_builds_against_the_pinned_nvml_h_and_none_of_it_is_stubbed(gen_stubs, gen_getters):
    build = _load("mokka_native_build_unit", os.path.join(REPO, "native", "build.py"))
    keys = _load("mokka_gen_keys_unit", os.path.join(REPO, "native", "nvml", "gen_keys.py"))
    with open(build.nvml_header(), encoding="utf-8") as f:
        functions = gen_stubs.parse_header(f.read())
    sources = build.hand_written_sources()
    table = gen_getters.table()
    getters = gen_getters.render(functions, table, keys.gpu_macros(), gen_stubs.handwritten(sources))
    stubs = gen_stubs.render(functions, gen_stubs.defined_elsewhere(sources))
    assert {"nvmlDeviceGetSerial", "nvmlDeviceGetNumaNodeId", "nvmlDeviceGetTotalEnergyConsumption"} <= {
        g.name for g in table}
    for g in table:
        assert getters.count(f" {g.name}(") == 1 and f" {g.name}(" not in stubs, g.name
