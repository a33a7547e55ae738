"""native/nvml in rooms, and no include circle.

The mock libnvidia-ml.so.1 is three rooms, each a folder of native/nvml with its
own header, lowest first (native/build.py's NVML_ROOMS):

    engine/   engine.h   the state read from disk, the node, lookup through the layers,
                         overrides, moving readings, the handles
    mig/      mig.h      MIG: partition tables, the node's partitions, this process's view,
                         MIG's NVML calls
    api/      api.h      NVML's calls over both, the process records, the events, the
                         export table; the generated getters.c and stubs.c belong here

A circle is a path of dependencies that comes back to where it started. Two kinds
are ruled out here, so none can form:

  * between rooms: a file depends on a room when it includes one of that room's
    headers or names a function one of that room's .c files defines. A file may
    depend on its own room and the rooms below it, never on a room above, so the
    rooms form a line (engine <- mig <- api). Where the engine needs MIG, MIG hands
    it a table of function pointers (struct mig_hooks of engine/engine.h);
  * between headers: the graph of `#include "..."` among native/nvml's headers has no
    cycle, whatever the rooms.

Within a room its files share the room's header and may call each other both ways
(mig_state.c and mig_view.c, ecc.c and sram.c, processes.c and process_scan.c /
process_sweep.c do): a room is the unit.

And no local prototypes: a .c file declares no function that it does not
define itself; a function is declared once, in the header of the
room that defines it, so a changed signature fails to compile wherever it is
called. The build enforces the same with -Wmissing-prototypes -Wredundant-decls
-Werror (build.NVML_WARNINGS).

A quoted include names a header of its own folder ("flat.h"), a header of a room
by its path under native/nvml ("engine/engine.h"), or a generated header
(mokka_keys.h, mokka_names.h).

Each check runs on the library and on a small tree made to break it (a positive
control), so a check that finds nothing is a check that can find something.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys

import pytest

from tests.native.conftest import REPO

NVML = os.path.join(REPO, "native", "nvml")
GENERATED_HEADERS = frozenset({"mokka_keys.h", "mokka_names.h"})
#: The generators of the API room's generated sources: their includes count as its files'.
GENERATORS = {"gen_getters.py": "api", "gen_stubs.py": "api"}


def _build_module():
    spec = importlib.util.spec_from_file_location("mokka_native_build_rooms",
                                                  os.path.join(REPO, "native", "build.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BUILD = _build_module()
ROOMS = BUILD.NVML_ROOMS


# --------------------------------------------------------------------------- reading C

_TOKENS = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_USE = re.compile(r"(?:(->|\.)\s*)?\b([A-Za-z_]\w*)")
_DECLARATOR = re.compile(r"^(?P<head>[^()=]*?)\b(?P<name>[A-Za-z_]\w*)\s*\(")


def _code(text: str, strings: bool = False) -> str:
    """The text with comments blanked, and strings and character constants unless
    `strings` (newlines kept)."""
    def blank(m: re.Match) -> str:
        s = m.group(0)
        if s.startswith("/"):
            return re.sub(r"[^\n]", " ", s)
        return s if strings else s[0] + re.sub(r"[^\n]", " ", s[1:-1]) + s[-1]
    return _TOKENS.sub(blank, text)


def _without_directives(code: str) -> str:
    out, cont = [], False
    for line in code.split("\n"):
        directive = cont or line.lstrip().startswith("#")
        cont = directive and line.rstrip().endswith("\\")
        out.append("" if directive else line)
    return "\n".join(out)


def _file_scope(code: str) -> list[tuple[str, str]]:
    """The file-scope declarations of `code` as (text, end): end ";" for a declaration,
    "{}" for one followed by a body (a definition, a struct, an initializer)."""
    flat, depth = [], 0
    for ch in _without_directives(code):
        if ch == "{":
            depth += 1
            continue
        if ch == "}":
            depth -= 1
            if depth == 0:
                flat.append("{}")
            continue
        if depth == 0:
            flat.append(ch)
    parts = re.split(r"(;|\{\})", "".join(flat))
    return [(" ".join(parts[i].split()), parts[i + 1]) for i in range(0, len(parts) - 1, 2)]


def functions(code: str) -> tuple[set[str], set[str], set[str]]:
    """(non-static definitions, non-static prototypes, static names) at file scope."""
    defined, declared, static = set(), set(), set()
    for text, end in _file_scope(code):
        m = _DECLARATOR.match(text)
        if not m or not m.group("head").strip():
            continue                                  # a macro's use, _Static_assert, ...
        words = m.group("head").split()
        if "typedef" in words or text[m.end():].lstrip().startswith("*"):
            continue                                  # a type, a pointer to a function
        name = m.group("name")
        if "static" in words:
            static.add(name)
        elif end == "{}" and "=" not in text:
            defined.add(name)
        elif end == ";":
            declared.add(name)
    return defined, declared, static


def _names_used(code: str) -> set[str]:
    """Identifiers of the code, members after `.` / `->` aside."""
    return {m.group(2) for m in _USE.finditer(_without_directives(code)) if not m.group(1)}


# --------------------------------------------------------------------------- the tree

class Tree:
    """The C files of a native/nvml-shaped folder, by path relative to it."""

    def __init__(self, root: str, rooms: tuple[str, ...] = ROOMS, generators: dict | None = None):
        self.root, self.rooms = root, rooms
        self.files: dict[str, str] = {}
        self.stray: list[str] = []
        for folder, _, names in os.walk(root):
            for name in names:
                if not name.endswith((".c", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(folder, name), root)
                parts = rel.split(os.sep)
                if len(parts) != 2 or parts[0] not in rooms:
                    self.stray.append(rel)
                    continue
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    self.files["/".join(parts)] = f.read()
        # What the generators write into the API room: their includes, as a file of it.
        self.generated: dict[str, tuple[str, list[str]]] = {}
        for name, room in (GENERATORS if generators is None else generators).items():
            path = os.path.join(root, name)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    self.generated[name] = (room, re.findall(r"""#include "([^"]+)\"""", f.read()))

    def room(self, rel: str) -> str:
        return rel.split("/")[0]

    def rank(self, room: str) -> int:
        return self.rooms.index(room)

    def resolve(self, rel: str, name: str) -> str | None:
        """The tree file an include of `rel` names, "" for a generated header, None for neither."""
        if name in GENERATED_HEADERS:
            return ""
        beside = f"{self.room(rel)}/{name}"
        if "/" not in name and beside in self.files:
            return beside
        if name in self.files:
            return name
        return None

    def includes(self, rel: str) -> list[str]:
        return _INCLUDE.findall(_code(self.files[rel], strings=True))


def include_problems(tree: Tree) -> list[str]:
    """Includes that name no header of the tree, or a header of a higher room."""
    problems = [f"{rel}: outside the rooms {', '.join(tree.rooms)}" for rel in sorted(tree.stray)]
    sources = [(rel, tree.room(rel), tree.includes(rel)) for rel in sorted(tree.files)]
    sources += [(f"{name} (generated)", room, names) for name, (room, names) in sorted(tree.generated.items())]
    for rel, room, names in sources:
        for name in names:
            target = tree.resolve(f"{room}/x" if rel.endswith("(generated)") else rel, name)
            if target is None:
                problems.append(f'{rel}: #include "{name}" is no header of native/nvml '
                                f'(name a room\'s header by its path, "engine/engine.h")')
            elif target and tree.rank(tree.room(target)) > tree.rank(room):
                problems.append(f'{rel}: #include "{name}": {room} includes {tree.room(target)}, a room above it')
    return problems


def header_cycles(tree: Tree) -> list[list[str]]:
    """Each cycle of the include graph among the tree's headers (and from its .c files)."""
    graph = {rel: [t for n in tree.includes(rel) if (t := tree.resolve(rel, n))] for rel in tree.files}
    cycles, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def call_problems(tree: Tree) -> list[str]:
    """Names of functions a higher room defines, used in a lower room's file; and
    functions a header declares that another room defines."""
    defined_in: dict[str, str] = {}
    parsed = {rel: functions(_code(text)) for rel, text in tree.files.items()}
    for rel, (defined, _, _) in parsed.items():
        if rel.endswith(".c"):
            for name in defined:
                defined_in[name] = rel
    problems = []
    for rel, text in sorted(tree.files.items()):
        room = tree.room(rel)
        static = parsed[rel][2]
        for name in sorted(_names_used(_code(text)) - static):
            home = defined_in.get(name)
            if home and tree.rank(tree.room(home)) > tree.rank(room):
                problems.append(f"{rel}: names {name}, a function of {home}: {room} is below {tree.room(home)}")
        if rel.endswith(".h"):
            for name in sorted(parsed[rel][1]):
                home = defined_in.get(name)
                if home and tree.room(home) != room:
                    problems.append(f"{rel}: declares {name}, defined in {home}: "
                                    f"declare it in {tree.room(home)}'s header")
    return problems


def local_prototypes(tree: Tree) -> list[str]:
    """Prototypes in .c files of functions they do not define: each should be a header's.
    (A file may declare what it defines itself: export_table.c marks its export so.)"""
    problems = []
    for rel, text in sorted(tree.files.items()):
        if rel.endswith(".c"):
            defined, declared, _ = functions(_code(text))
            for name in sorted(declared - defined):
                problems.append(f"{rel}: declares {name} itself: include the header of the room that defines it")
    return problems


# --------------------------------------------------------------------------- the library

@pytest.fixture(scope="module")
def library() -> Tree:
    return Tree(NVML)


def test_every_c_file_and_header_is_in_a_room(library):
    assert library.stray == []
    assert {library.room(rel) for rel in library.files} == set(ROOMS)
    for room in ROOMS:
        assert f"{room}/{room}.h" in library.files, f"the {room} room has its own header {room}/{room}.h"


def test_the_build_compiles_every_room_and_nothing_else():
    lib = BUILD.LIBRARIES["nvml"]
    built = {os.path.relpath(p, NVML).replace(os.sep, "/") for p in BUILD.sources(lib)}
    assert built == {rel for rel in Tree(NVML).files if rel.endswith(".c")}
    assert set(BUILD.NVML_WARNINGS) <= set(lib.cflags)


def test_a_room_includes_only_its_own_headers_and_those_of_rooms_below(library):
    assert include_problems(library) == []


def test_the_headers_include_no_circle(library):
    assert header_cycles(library) == []


def test_no_room_calls_a_room_above_it(library):
    assert call_problems(library) == []


def test_no_c_file_declares_a_function_of_another(library):
    assert local_prototypes(library) == []


# --------------------------------------------------------------------------- positive controls

def _tree(tmp_path, files: dict[str, str]) -> Tree:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Tree(str(tmp_path), rooms=("engine", "mig", "api"), generators={})


GOOD = {
    "engine/engine.h": '#include "flat.h"\nint node_get(int k);\n',
    "engine/flat.h": "int flat_get(int k);\n",
    "engine/node.c": '#include "engine.h"\nint node_get(int k)\n{\n    return flat_get(k);\n}\n',
    "engine/flat.c": '#include "flat.h"\nint flat_get(int k) { return k; }\n',
    "mig/mig.h": '#include "engine/engine.h"\nint mig_open(int k);\n',
    "mig/mig.c": '#include "mig.h"\nint mig_open(int k) { return node_get(k); }\n',
    "api/api.h": '#include "engine/engine.h"\n#include "mig/mig.h"\n',
    "api/init.c": ('#include "api.h"\nstatic int helper(int k);\nint nvmlInit(void) { return helper(1); }\n'
                   "static int helper(int k) { return mig_open(k) + node_get(k); }\n"),
}


def test_control_a_tree_that_keeps_the_rules_passes(tmp_path):
    tree = _tree(tmp_path, GOOD)
    assert (include_problems(tree), header_cycles(tree), call_problems(tree), local_prototypes(tree)) == \
        ([], [], [], [])


def test_control_an_include_circle_of_headers_is_found(tmp_path):
    tree = _tree(tmp_path, {**GOOD, "engine/flat.h": '#include "engine.h"\nint flat_get(int k);\n'})
    assert header_cycles(tree) == [["engine/engine.h", "engine/flat.h", "engine/engine.h"]]


def test_control_the_engine_including_mig_is_found(tmp_path):
    tree = _tree(tmp_path, {**GOOD, "engine/node.c": '#include "engine.h"\n#include "mig/mig.h"\n'
                                                     "int node_get(int k) { return k; }\n"})
    assert include_problems(tree) == ['engine/node.c: #include "mig/mig.h": engine includes mig, a room above it']


def test_control_a_header_named_across_rooms_without_its_room_is_found(tmp_path):
    tree = _tree(tmp_path, {**GOOD, "mig/mig.h": '#include "engine.h"\nint mig_open(int k);\n'})
    assert len(include_problems(tree)) == 1


def test_control_the_engine_calling_mig_is_found(tmp_path):
    # A local prototype hides the include; the call is still a circle engine -> mig -> engine.
    tree = _tree(tmp_path, {**GOOD, "engine/node.c": '#include "engine.h"\nint mig_open(int k);\n'
                                                     "int node_get(int k) { return mig_open(k); }\n"})
    assert call_problems(tree) == ["engine/node.c: names mig_open, a function of mig/mig.c: engine is below mig"]
    assert local_prototypes(tree) == ["engine/node.c: declares mig_open itself: "
                                      "include the header of the room that defines it"]


def test_control_a_header_declaring_another_rooms_function_is_found(tmp_path):
    tree = _tree(tmp_path, {**GOOD, "api/api.h": '#include "mig/mig.h"\nint node_get(int k);\n'})
    assert call_problems(tree) == ["api/api.h: declares node_get, defined in engine/node.c: "
                                   "declare it in engine's header"]


def test_control_declarations_are_told_from_definitions():
    code = _code("static int (*hook)(void);\ntypedef int (*fn)(int);\n_Static_assert(1, \"x\");\n"
                 "struct s *make(void);\nconst char *name(int k) __attribute__((pure));\n"
                 "int value = f(2);\nstatic int quiet(void) { return 0; }\n"
                 "nvmlReturn_t DECLDIR nvmlInit(void)\n{\n    int inner(void);\n    return inner();\n}\n"
                 "struct mig_hooks table = {.open = make};\n")
    assert functions(code) == ({"nvmlInit"}, {"make", "name"}, {"quiet"})
