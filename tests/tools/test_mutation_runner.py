"""tools/mutation.py runs each mutant's tests against the mutated copy, never the work tree."""

from __future__ import annotations

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _runner():
    spec = importlib.util.spec_from_file_location("mokka_mutation_runner", os.path.join(REPO, "tools", "mutation.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module            # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_a_prebuilt_library_of_the_caller_is_not_what_the_mutant_is_tested_against():
    caller = {"PATH": "/usr/bin", "MOKKA_NATIVE_DIR": "/work/tree/build/native/x86_64",
              "MOKKA_NVML_TEST_PRELOAD": "/usr/lib/libasan.so.8"}
    env = _runner().run_env("/tmp/mutation/tree0", caller)
    assert env["MOKKA_NATIVE_DIR"] == os.path.join("/tmp/mutation/tree0/build/native", os.uname().machine)
    assert env["PYTHONPATH"] == "/tmp/mutation/tree0"
    assert "MOKKA_NVML_TEST_PRELOAD" not in env
    assert env["PATH"] == "/usr/bin"
