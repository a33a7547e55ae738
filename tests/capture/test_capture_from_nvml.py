"""``mokka profile capture --from-nvml``: a live library's report, through the same
parser, gives back the profile of the node behind it.

A staged mock node serves as the real one (NVIDIA's real library is never loaded
here: run as root without a driver it creates /dev/nvidiactl). Its library is
loaded as any NVML, and once more as a copy without Mokka's private calls, which
is how NVIDIA's library looks to the loader: the capture must not need them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mokka.core import compile as comp
from mokka.core import names
from mokka.core import profile as prof
from tests.native.staged import ok, staged_node, nvml_build  # noqa: F401 (fixtures)

#: Mokka's private calls, as the copy renames them (same length: the ELF's strings keep their places).
PRIVATE = {b"nvmlMokkaGetNodePath\0": b"nvmlMokkaGetNodeXath\0",
           b"nvmlMokkaGetDeviceIdentity\0": b"nvmlMokkaGetDeviceXdentity\0"}


def capture(node, *args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mokka", "profile", "capture", *args], capture_output=True,
                          text=True, env=node.env(**env), timeout=120)


def flat(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from flat(item, path + (key,))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from flat(item, path + (n,))
    else:
        yield path, value


def state_of(profile: str) -> dict:
    state = comp.compile_profile(prof.load(profile))
    for gpu in state["gpus"]:
        # A node staged --once has no fabricmanager: `auto` reads completed, which is what a
        # capture of it says.
        if (gpu.get("fabric") or {}).get("state") == names.FABRIC_STATE_AUTO:
            gpu["fabric"]["state"] = names.FABRIC_STATE_COMPLETED
    return {k: v for k, v in flat(state) if k[0] not in ("generator", "profile")}


def differences(original: str, captured: str) -> tuple[list, int]:
    a, b = state_of(original), state_of(captured)
    common = [k for k in a if k in b]
    return [f"{k}: original {a[k]!r}, captured {b[k]!r}" for k in common if a[k] != b[k]], len(common)


@pytest.mark.parametrize("name", names.BUILTIN_PROFILES)
def test_a_staged_node_captures_back_to_its_profile(name, staged_node, tmp_path):
    node = staged_node(name, nvidia_smi=False)
    out = tmp_path / "captured.yaml"
    library = os.path.join(node.overlay.driver, "usr", "lib64", names.NVML_LIB_FILE)
    ok(capture(node, "--from-nvml", library, "--dynamic", "--out", str(out)))
    diff, common = differences(name, str(out))
    assert common > 800, common
    assert diff == []


def test_the_default_library_is_the_one_the_loader_finds(staged_node, tmp_path):
    node = staged_node("h100", nvidia_smi=False)
    lib64 = os.path.join(node.overlay.driver, "usr", "lib64")
    result = capture(node, "--from-nvml", "--dynamic", LD_LIBRARY_PATH=lib64)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Captured by mokka profile capture from libnvidia-ml.so.1: 8 x NVIDIA H100")
    out = tmp_path / "captured.yaml"
    out.write_text(result.stdout)
    assert differences("h100", str(out))[0] == []


@pytest.fixture
def foreign(staged_node, tmp_path):
    """(node, a copy of its library without Mokka's private calls)."""
    node = staged_node("gb200", nvidia_smi=False)
    with open(os.path.join(node.overlay.driver, "usr", "lib64", names.NVML_LIB_FILE), "rb") as f:
        data = f.read()
    for name, other in PRIVATE.items():
        assert data.count(name) == 1
        data = data.replace(name, other)
    path = tmp_path / "libnvidia-ml.so.1"
    path.write_bytes(data)
    return node, str(path)


def test_a_library_without_mokkas_calls_is_captured_through_nvml_alone(foreign, tmp_path):
    node, library = foreign
    out = tmp_path / "captured.yaml"
    ok(capture(node, "--from-nvml", library, "--dynamic", "--out", str(out), MOCK_NVML_CONFIG=node.config))
    diff, common = differences("gb200", str(out))
    assert common > 800, common
    assert diff == []
    # the export table's rows are the mock's alone: T.Limit is not read, so no threshold is written
    assert "shutdown_threshold_c" not in out.read_text()


def test_mokkas_own_tools_still_refuse_such_a_library(foreign):
    node, library = foreign
    probe = ("import sys; from mokka.engine import nvml\n"
             "try:\n    nvml.Library(sys.argv[1])\nexcept nvml.LibraryError as exc:\n    print(exc)\n")
    result = subprocess.run([sys.executable, "-c", probe, library], capture_output=True, text=True,
                            env=node.env(), timeout=60)
    assert result.stdout == f"{library} is not Mokka's mock NVML library (no nvmlMokkaGetNodePath)\n"


@pytest.mark.parametrize("library, problem", [
    ("libm.so.6", "libm.so.6 is not an NVML library (no nvmlInit_v2)"),
    ("/nonexistent/libnvidia-ml.so.1", "cannot load /nonexistent/libnvidia-ml.so.1: "),
], ids=["a library that is not NVML", "no library there"])
def test_a_library_it_cannot_read_is_one_line(library, problem, staged_node):
    node = staged_node("t4", nvidia_smi=False)
    result = capture(node, "--from-nvml", library)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"capture: {library}: {problem}")
    assert result.stderr.count("\n") == 1
