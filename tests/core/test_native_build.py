"""The native build's pins and packaging: native/requirements.txt is what
pyproject's [test] extra installs, gen_stubs reads nvml.h's shapes, and the
zipapp carries the library for both architectures."""

from __future__ import annotations

import importlib.util
import os
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
    assert build_pins == {"shiv==1.0.8", "ziglang==0.14.1", "nvidia-nvml-dev-cu12==12.4.127"}
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


def test_the_zipapp_carries_every_library_for_both_architectures(zipapp):
    build = _load("mokka_native_build_unit", os.path.join(REPO, "native", "build.py"))
    with zipfile.ZipFile(zipapp) as z:
        names = set(z.namelist())
    for arch in ("x86_64", "aarch64"):
        assert f"site-packages/mokka/_native/{arch}/libnvidia-ml.so.1" in names
        for lib in build.LIBRARIES.values():
            assert f"site-packages/mokka/_native/{arch}/{lib.file}" in names


def test_build_table_names_every_library_by_its_soname_and_rejects_unknown_names(tmp_path):
    build = _load("mokka_native_build_unit", os.path.join(REPO, "native", "build.py"))
    assert build.LIBRARIES["nvml"].file == "libnvidia-ml.so.1"
    for lib in build.LIBRARIES.values():
        assert build.sources(lib), lib.file
    with pytest.raises(build.BuildError, match="unknown library nope"):
        build.build(str(tmp_path), ["x86_64"], libraries=["nope"])
