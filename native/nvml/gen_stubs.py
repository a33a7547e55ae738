"""Write ``stubs.c``: every NVML function that nothing else defines.

The table is nvml.h itself: every function it declares (read the way the build
compiles it, with NVML_NO_UNVERSIONED_FUNC_DEFS, so ``nvmlInit`` and
``nvmlInit_v2`` are both real names) minus the getters of getters.py
(gen_getters.py writes them) and the ones native/nvml/<room>/*.c define by hand. A
hand-written definition starts at column 0 with the return type and DECLDIR
exactly as nvml.h declares it, e.g.

    nvmlReturn_t DECLDIR nvmlDeviceGetName(nvmlDevice_t device, ...
    const DECLDIR char* nvmlErrorString(nvmlReturn_t result)

Each stub keeps nvml.h's prototype and answers ``mock_require_init()`` before
nvmlInit, NVML_ERROR_NOT_SUPPORTED after (api/hooks.h). Two names NVIDIA's library
exports that nvml.h only has as macros (the old "Blacklist" spellings) are
defined here too, unless written by hand. Never committed.

    python3 native/nvml/gen_stubs.py NVML_H OUT_DIR [SOURCE.c ...]
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# The build defines this (native/build.py): nvml.h then declares the unversioned
# names as functions of their own instead of macros for the newest version.
DEFINED_MACROS = frozenset({"NVML_NO_UNVERSIONED_FUNC_DEFS"})

# Exported by NVIDIA's 550 library, absent from nvml.h as functions: (prototype, body).
EXTRA_FUNCTIONS = {
    "nvmlGetBlacklistDeviceCount": (
        "nvmlReturn_t DECLDIR nvmlGetBlacklistDeviceCount(unsigned int *deviceCount)",
        "    nvmlReturn_t ret = mock_require_init();\n"
        "    if (ret != NVML_SUCCESS)\n"
        "        return ret;\n"
        "    if (deviceCount == NULL)\n"
        "        return NVML_ERROR_INVALID_ARGUMENT;\n"
        "    *deviceCount = 0;\n"
        "    return NVML_SUCCESS;\n",
    ),
    "nvmlGetBlacklistDeviceInfoByIndex": (
        "nvmlReturn_t DECLDIR nvmlGetBlacklistDeviceInfoByIndex(unsigned int index, void *info)",
        "    nvmlReturn_t ret = mock_require_init();\n"
        "    if (ret != NVML_SUCCESS)\n"
        "        return ret;\n"
        "    return NVML_ERROR_INVALID_ARGUMENT;     /* no device is ever excluded */\n",
    ),
}

STUB_BODY = (
    "    nvmlReturn_t ret = mock_require_init();\n"
    "    return ret != NVML_SUCCESS ? ret : NVML_ERROR_NOT_SUPPORTED;\n"
)

_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DECL = re.compile(
    r"(?P<ret>[A-Za-z_][\w \t\n*]*?\bDECLDIR\b[\w \t\n*]*?)"
    r"\b(?P<name>nvml\w+)\s*\((?P<params>[^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*)\)\s*;"
)
# Column 0: "nvmlReturn_t DECLDIR nvmlX(" or "const DECLDIR char* nvmlErrorString(".
_HANDWRITTEN = re.compile(r"^[A-Za-z_][\w \t*]*\bDECLDIR\b[\w \t*]*?\b(nvml\w+)\s*\(", re.M)


@dataclasses.dataclass(frozen=True)
class Function:
    name: str
    returns: str      # e.g. "nvmlReturn_t DECLDIR", "const DECLDIR char*"
    params: str       # as declared, whitespace folded

    @property
    def prototype(self) -> str:
        return f"{self.returns} {self.name}({self.params})"


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _defined(expr: str, macros: frozenset[str]) -> bool:
    """Evaluate a preprocessor condition made of defined()/!/&&/||."""
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: str((m.group(1) or m.group(2)) in macros), expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if re.search(r"[^\w\s()]|\b(?!True\b|False\b|and\b|or\b|not\b)[A-Za-z_]\w*", expr):
        return False            # anything else (a value test): not for us
    return bool(eval(expr, {"__builtins__": {}}))  # noqa: S307 - only True/False/and/or/not


def active_text(header: str, macros: frozenset[str] = DEFINED_MACROS) -> str:
    """The header without comments, preprocessor lines and inactive #if branches."""
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []    # (this branch active, some branch taken)
    active = True
    for line in _COMMENTS.sub(" ", header).splitlines():
        m = re.match(r"\s*#\s*(\w+)\s*(.*)", line)
        if not m:
            if active:
                out.append(line)
            continue
        word, rest = m.group(1), m.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            if word == "ifdef":
                cond = rest.split()[0] in macros
            elif word == "ifndef":
                cond = rest.split()[0] not in macros
            else:
                cond = _defined(rest, macros)
            stack.append((cond, cond))
        elif word == "elif":
            _, taken = stack.pop()
            cond = not taken and _defined(rest, macros)
            stack.append((cond, taken or cond))
        elif word == "else":
            _, taken = stack.pop()
            stack.append((not taken, True))
        elif word == "endif":
            stack.pop()
        active = all(a for a, _ in stack)
    return "\n".join(out)


def parse_header(header: str) -> dict[str, Function]:
    """Every function nvml.h declares, by name (a later declaration must agree)."""
    found: dict[str, Function] = {}
    for m in _DECL.finditer(active_text(header)):
        fn = Function(m.group("name"), _squash(m.group("ret")), _squash(m.group("params")))
        if fn.name in found and found[fn.name] != fn:
            raise ValueError(f"nvml.h declares {fn.name} twice, differently")
        found[fn.name] = fn
    return found


def handwritten(sources: list[str]) -> set[str]:
    names: set[str] = set()
    for path in sources:
        with open(path, encoding="utf-8") as f:
            names.update(_HANDWRITTEN.findall(_COMMENTS.sub(" ", f.read())))
    return names


def _gen_getters():
    spec = importlib.util.spec_from_file_location("mokka_gen_getters", os.path.join(HERE, "gen_getters.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def defined_elsewhere(sources: list[str]) -> set[str]:
    """What needs no stub: the getter table's functions and the hand-written ones."""
    return _gen_getters().names() | handwritten(sources)


def render(functions: dict[str, Function], written: set[str]) -> str:
    lines = [
        "/* Generated by native/nvml/gen_stubs.py from nvml.h: do not edit. */",
        "#include <stddef.h>",
        "#include <nvml.h>",
        '#include "api/hooks.h"',
        "",
        '#pragma GCC diagnostic ignored "-Wunused-parameter"',
        "",
    ]
    for name in sorted(functions):
        if name in written:
            continue
        fn = functions[name]
        if not fn.returns.startswith("nvmlReturn_t"):
            raise ValueError(f"{name} returns {fn.returns!r}: write it by hand")
        lines += [f"{fn.prototype}", "{", STUB_BODY.rstrip("\n"), "}", ""]
    for name, (prototype, body) in sorted(EXTRA_FUNCTIONS.items()):
        if name in written or name in functions:
            continue
        # Outside nvml.h, so not under visibility.h's pragma: export it by hand.
        lines += [f"MOKKA_EXPORT {prototype};", prototype, "{", body.rstrip("\n"), "}", ""]
    return "\n".join(lines)


def exported_names(functions: dict[str, Function]) -> list[str]:
    """Every name the library exports: nvml.h's functions plus the extras."""
    return sorted(set(functions) | set(EXTRA_FUNCTIONS) | {"nvmlInternalGetExportTable"})


def write_if_changed(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    header, out_dir = argv[1], argv[2]
    sources = argv[3:] or sorted(glob.glob(os.path.join(HERE, "*", "*.c")))   # every room
    sources = [s for s in sources if os.path.basename(s) not in ("stubs.c", "getters.c")]
    with open(header, encoding="utf-8") as f:
        functions = parse_header(f.read())
    os.makedirs(out_dir, exist_ok=True)
    write_if_changed(os.path.join(out_dir, "stubs.c"), render(functions, defined_elsewhere(sources)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
