"""The state's keys have one home, and the mock NVML library names them through it.

mokka/engine/statekeys.py walks the declarations of the profile (schema.py) and
of what compilation adds (compile.py); native/nvml/gen_keys.py makes each key a
macro of mokka_keys.h. Here: the header spells the keys as the companion does,
a misspelt macro does not compile, and no hand-written C file spells a state
key as a string literal (the scanner is tried on code that does, too).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from mokka.core import names
from mokka.engine import statekeys
from tests.conftest import REPO

NVML_SRC = os.path.join(REPO, "native", "nvml")

#: String literals of files the scan cannot change yet, each named: (file, literal).
#: The lead converts them with those files; a literal not listed here fails.


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"mokka_{name}_test", os.path.join(NVML_SRC, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen_keys():
    return _load("gen_keys")


# --------------------------------------------------------------------------- the header


@pytest.mark.parametrize("line", [
    '#define K_THERMAL_TEMPERATURE_GPU_C "thermal.temperature_gpu_c"',
    '#define K_FABRIC "fabric"',
    '#define K_FABRIC_HEALTH_ROUTE_UNHEALTHY "fabric.health.route_unhealthy"',
    '#define K_PCI_BUS_ID "pci.bus_id"',
    '#define K_NUMA_NODE "numa_node"',
    '#define K_NVLINK_LINKS "nvlink_links"',
    '#define K_NVLINK_LINKS_LEN "nvlink_links.len"',
    '#define K_NVLINK_LINKS_N_STATE "nvlink_links.%u.state"',
    '#define K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS_N '
    '"supported_clocks.memory_clocks.%u.graphics_clocks.%u"',
    '#define K_ECC_ERRORS_AGGREGATE_DOUBLE_BIT_TOTAL "ecc.errors.aggregate.double_bit.total"',
    '#define K_FAILURE_LOST "failure.lost"',
    '#define NODE_SYSTEM_DRIVER_VERSION "system.driver_version"',
    '#define NODE_NVLINK_BANDWIDTH_PER_LINK_MBPS "nvlink.bandwidth_per_link_mbps"',
    '#define NODE_GPU_LEN "gpu.len"',
    '#define NODE_GPU_N "gpu.%u"',
], ids=lambda line: line.split()[1])
def test_the_header_spells_each_key_as_the_companion_does(gen_keys, line):
    assert line in gen_keys.render().splitlines()


def test_the_header_has_no_macro_for_a_key_nothing_declares(gen_keys):
    text = gen_keys.render()
    assert "K_THERMAL_TEMPERATURE_GPU " not in text and "K_TEMPERATURE_GPU_C " not in text
    assert "NODE_THERMAL" not in text and "K_SYSTEM_DRIVER_VERSION" not in text   # each in its namespace
    defined = re.findall(r"^#define ([KN]\w+) ", text, re.M)
    declared = len(set(statekeys.gpu_keys())) + len(set(statekeys.node_keys()))
    assert len(defined) == len(set(defined)) == declared


def test_two_keys_that_would_share_a_macro_are_refused(gen_keys):
    with pytest.raises(ValueError, match=r"'a.b_c' and 'a_b.c' would both be K_A_B_C"):
        gen_keys.macros("K_", [("a", "b_c"), ("a_b", "c")])
    assert gen_keys.macros("K_", [("a", "b"), ("a", statekeys.ITEM, "c")]) == {
        "K_A_B": "a.b", "K_A_N_C": "a.%u.c"}


def test_the_key_ctl_marks_a_gpu_lost_with_is_a_gpu_key():
    assert names.STATE_LOST_KEY in {statekeys.text(k) for k in statekeys.gpu_keys()}


def test_a_misspelt_key_does_not_compile(gen_keys, tmp_path):
    if importlib.util.find_spec("ziglang") is None:
        pytest.skip("ziglang (native/requirements.txt) is not installed")
    (tmp_path / "mokka_keys.h").write_text(gen_keys.render())

    def compiles(key: str) -> subprocess.CompletedProcess:
        source = tmp_path / "use.c"
        source.write_text(f'#include "mokka_keys.h"\nconst char *key = {key};\n')
        return subprocess.run([sys.executable, "-m", "ziglang", "cc", "-c", "-Werror", "-I", str(tmp_path),
                               "-o", str(tmp_path / "use.o"), str(source)], capture_output=True, text=True)

    assert compiles("K_THERMAL_TEMPERATURE_GPU_C").returncode == 0
    misspelt = compiles("K_THERMAL_TEMPRATURE_GPU_C")
    assert misspelt.returncode != 0 and "K_THERMAL_TEMPRATURE_GPU_C" in misspelt.stderr


# --------------------------------------------------------------------------- the C sources

_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DOTTED = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z0-9_%]+)+\.?")
#: The calls that take a key (api.c, lookup.c, node.c, flat.c and their static helpers).
_LOOKUP = re.compile(r"\b(gpu_\w+|api_u32|api_u64|api_string|api_enabled|node_get|node_u64|flat_get|"
                     r"flat_has_prefix|base_get|state_get|state_ll|field|key_u32|tlimit|sampled|fan_value|"
                     r"link_field|system_string|lookup_word)\(")


def _arguments(src: str, start: int) -> str:
    depth, i = 1, start
    while depth and i < len(src):
        if src[i] == '"':
            i = _LITERAL.match(src, i).end()
            continue
        depth += {"(": 1, ")": -1}.get(src[i], 0)
        i += 1
    return src[start:i - 1]


def key_literals(source: str) -> set[str]:
    """The string literals of a C source that spell a state key: a key (or a key's
    prefix), a dotted key under a top-level key, or any word a key lookup is given."""
    keys = {statekeys.text(k) for k in statekeys.gpu_keys() + statekeys.node_keys()}
    tops = {k[0] for k in statekeys.gpu_keys() + statekeys.node_keys()}
    src = "\n".join(line for line in _COMMENT.sub(" ", source).splitlines()
                    if not line.lstrip().startswith("#include"))
    found = set()
    for m in _LITERAL.finditer(src):
        text = m.group(1)
        if text.rstrip(".") in keys or (_DOTTED.fullmatch(text) and text.split(".")[0] in tops):
            found.add(text)
    for m in _LOOKUP.finditer(src):
        found.update(t for t in _LITERAL.findall(_arguments(src, m.end())) if re.search(r"[a-z]", t))
    return found


def test_the_scan_finds_keys_spelt_as_literals():
    source = """
        #include "mock.h"      /* "thermal.temperature_gpu_c" in a comment is prose */
        static const char *const keys[] = {"inforom.oem_object", K_INFOROM_ECC_OBJECT};
        int f(const struct mock_gpu *g, unsigned int i, char *key) {
            unsigned long long v;
            snprintf(key, 64, "processes.%u.pid", i);
            return gpu_u64(g, "thermal.temprature_gpu_c", &v) + gpu_flag(g, "uuid", 0) +
                   gpu_has_prefix(g, K_FABRIC ".") + node_u64(g->node, NODE_GPU_LEN, &v) +
                   (strcasecmp(key, MOKKA_VISIBLE_NONE) == 0) + puts("mock NVML: no GPU");
        }
    """
    assert key_literals(source) == {"inforom.oem_object", "processes.%u.pid", "thermal.temprature_gpu_c",
                                    "uuid"}


def test_no_c_file_spells_a_state_key_as_a_literal():
    spelt = set()
    for path in sorted(glob.glob(os.path.join(NVML_SRC, "*", "*.c"))):     # every room
        with open(path, encoding="utf-8") as f:
            spelt |= {(os.path.relpath(path, NVML_SRC), text) for text in key_literals(f.read())}
    assert sorted(spelt) == []
