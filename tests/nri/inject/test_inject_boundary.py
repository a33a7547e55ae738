"""The decision stays pure: no runtime type, socket or disk access crosses into it."""

from __future__ import annotations

import ast
import pathlib

import pytest

import mokka.nri.inject as inject

PACKAGE = pathlib.Path(inject.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))
FORBIDDEN_IMPORTS = ("mokka.nri.proto", "mokka.nri.convert", "mokka.nri.plugin", "mokka.nri.codec",
                     "mokka.nri.gate", "mokka.nri.nodeview", "socket", "subprocess", "yaml", "google")
FORBIDDEN_CALLS = ("open", "listdir", "scandir", "stat", "lstat", "exists", "isfile")


def imported(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_module_is_free_of_io(path):
    tree = ast.parse(path.read_text())
    for name in imported(tree):
        assert not name.startswith(FORBIDDEN_IMPORTS), f"{path.name} imports {name}"
    calls = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
             for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert not calls & set(FORBIDDEN_CALLS), f"{path.name} calls {calls & set(FORBIDDEN_CALLS)}"


def test_rule_modules_have_no_catch_all_handlers():
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler):
                assert node.type is not None and getattr(node.type, "id", "") not in ("Exception",
                                                                                       "BaseException"), path.name
