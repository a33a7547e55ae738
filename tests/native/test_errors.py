"""Error paths: no profile, a YAML without (or with a stale) companion, struct versions,
bad arguments, the init reference count, and the warnings that keep the profile."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from mokka.engine import flatstate
from mokka.core import names
from tests.corpus import engine_cases as corpus
from tests.native.conftest import PROBE, clean_env, run_probe

DRIVER_NOT_LOADED = 9


def _stage(tmp_path, profile="h100", **kw):
    return corpus.stage(corpus.Case("errors", profile, (), **kw), str(tmp_path))


def test_no_profile_anywhere_is_one_line_and_driver_not_loaded(nvml_lib, tmp_path):
    for fixed in (names.CDI_CONFIG_MOUNT, names.OVERLAY_MOUNT_PATH, names.OVERLAY_HOST_PATH):
        if os.path.exists(fixed):
            pytest.skip(f"this host has {fixed}")
    seen, stderr = run_probe(nvml_lib, {names.ENV_DEV_ROOT: str(tmp_path)}, "init")
    assert seen == {"init": DRIVER_NOT_LOADED}
    assert stderr.count("\n") == 1
    assert stderr.startswith("mock NVML: no GPU profile found: set MOCK_NVML_CONFIG ")


def test_config_that_does_not_exist(nvml_lib, tmp_path):
    seen, stderr = run_probe(nvml_lib, {names.ENV_NVML_CONFIG: str(tmp_path / "nope.yaml")}, "init")
    assert seen == {"init": DRIVER_NOT_LOADED}
    assert stderr.count("\n") == 1 and f"MOCK_NVML_CONFIG={tmp_path}/nope.yaml does not exist" in stderr


def _no_companion_line(config: str, reason: str) -> str:
    stem = config[: -len(".yaml")]
    return (f"mock NVML: {config} has no compiled state ({stem}.nvml: {reason}): "
            f"run 'mokka compile --companion {config}'\n")


def test_yaml_without_companion_names_the_path_and_the_command(nvml_lib, tmp_path):
    env = _stage(tmp_path)
    config = env[names.ENV_NVML_CONFIG]
    os.unlink(flatstate.companion_path(config))
    seen, stderr = run_probe(nvml_lib, env, "init")
    assert seen == {"init": DRIVER_NOT_LOADED}
    assert stderr == _no_companion_line(config, "missing")


STALE = "stale: not compiled from this YAML"
EDITED = "truncated or edited: its checksum is not the one its header states"
CUT = "truncated or edited: its length is not the one its header states"


@pytest.mark.parametrize("spoil, reason", [
    ("yaml edited after compiling", STALE),
    ("companion of another profile", STALE),
    ("companion of another kind", "a companion of another kind, not state"),
    ("companion of the format before", "written in another format version, not 2"),
    ("companion cut short after the header", CUT),
    ("companion cut at a line boundary", CUT),
    ("a value edited in place", EDITED),
    ("two lines swapped", EDITED),
    ("a line dropped, the length restated", EDITED),
])
def test_stale_or_broken_companion_is_refused(nvml_lib, tmp_path, spoil, reason):
    env = _stage(tmp_path)
    config = env[names.ENV_NVML_CONFIG]
    companion = flatstate.companion_path(config)
    text = open(companion, "rb").read()
    head, body = text.split(b"\n", 3)[:3], text.split(b"\n", 3)[3]
    lines = body.split(b"\n")
    if spoil == "yaml edited after compiling":
        with open(config, "ab") as f:
            f.write(b"# edited\n")
    elif spoil == "companion of another profile":
        shutil.copy(corpus.stage(corpus.Case("other", "a100", ()), str(tmp_path / "other"))[names.ENV_NVML_CONFIG]
                    .replace(".yaml", ".nvml"), companion)
    elif spoil == "companion of another kind":
        open(companion, "wb").write(text.replace(b"# mokka-nvml state 2", b"# mokka-nvml overrides 2", 1))
    elif spoil == "companion of the format before":          # version 1: no body line
        open(companion, "wb").write(b"# mokka-nvml state 1\n" + head[1] + b"\n" + body)
    elif spoil == "companion cut short after the header":
        open(companion, "wb").write(b"\n".join(head) + b"\n")
    elif spoil == "companion cut at a line boundary":
        open(companion, "wb").write(b"\n".join(head + lines[:len(lines) // 2]) + b"\n")
    elif spoil == "a value edited in place":
        at = next(i for i, line in enumerate(lines) if line.startswith(b"gpu.0.name "))
        lines[at] = b"gpu.0.name NVIDIA H100 80GB HBM4"
        open(companion, "wb").write(b"\n".join(head + lines))
    elif spoil == "two lines swapped":
        lines[5], lines[6] = lines[6], lines[5]
        open(companion, "wb").write(b"\n".join(head + lines))
    else:
        kept = b"\n".join(lines[:3] + lines[4:])
        stated = head[2].split(b" ")
        head[2] = b" ".join([stated[0], str(len(kept)).encode(), stated[2]])
        open(companion, "wb").write(b"\n".join(head) + b"\n" + kept)
    seen, stderr = run_probe(nvml_lib, env, "init")
    assert seen == {"init": DRIVER_NOT_LOADED}
    assert stderr == _no_companion_line(config, reason)


def test_library_in_the_overlay_finds_its_config(nvml_lib, tmp_path):
    root = tmp_path / "overlay"
    lib_dir = root / names.DRIVER_LIB_DIR
    cfg_dir = root / names.DRIVER_CONFIG_DIR
    lib_dir.mkdir(parents=True)
    shutil.copy(os.path.join(nvml_lib, names.NVML_LIB_FILE), lib_dir)
    env = _stage(tmp_path / "src", "t4")
    shutil.copytree(os.path.dirname(env.pop(names.ENV_NVML_CONFIG)), cfg_dir)
    seen, stderr = run_probe(str(lib_dir), env, "init")
    assert seen == {"init": 0, "count": 4} and stderr == ""      # t4: four GPUs


def test_return_codes_of_the_error_paths(nvml_lib, tmp_path):
    seen, stderr = run_probe(nvml_lib, _stage(tmp_path), "errors")
    assert stderr == ""
    assert seen == {
        "count before init": 1, "shutdown before init": 1, "init": 0, "init again": 0,
        "handle 0": 0, "handle 99": 2, "count NULL": 2,
        "name NULL handle": 2, "name bogus handle": 2, "name 4 bytes": 7, "name NULL buffer": 2,
        "memory v2 bare 2": 25, "memory v2 0x2000028": 0, "memory v2 v1 size": 25,
        "pci ext 0x1000040": 0, "pci ext bare 1": 25,
        "fabric v2": 0, "fabric bare 2": 25,
        "driver version 3 bytes": 7, "uuid 96 bytes": 0,
        "by uuid": 0, "by uuid same": True, "by uuid unknown": 6,
        "by bus id long": [0, True], "by bus id legacy": [0, True], "by bus id short": [0, True],
        "by bus id no function": [0, True], "by bus id garbage": 2,
        "shutdown 1": 0, "query after one shutdown": 0, "shutdown 2": 0,
        "query after last shutdown": 1, "shutdown 3": 1,
    }


def test_stale_overrides_warn_once_and_are_ignored(nvml_lib, tmp_path):
    env = _stage(tmp_path, "a100", overrides={None: "name: Overridden\n"})
    overrides = os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), "overrides", "all.yaml")
    with open(overrides, "a") as f:
        f.write("# edited without compiling\n")
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert {g["name"] for g in seen["gpus"]} == {"NVIDIA A100-SXM4-40GB"}
    assert stderr == (f"mock NVML: ignoring overrides {overrides}: {overrides[:-5]}.nvml: stale: not compiled "
                      f"from this YAML: run 'mokka compile --companion {overrides}'\n")


@pytest.mark.parametrize("text, named", [("  \n", False), ("x\n \n", True)],
                         ids=["only white space is silent", "one letter is a document to compile"])
def test_overrides_without_companion_are_named_unless_blank(nvml_lib, tmp_path, text, named):
    env = _stage(tmp_path, "a100")
    overrides = os.path.join(os.path.dirname(env[names.ENV_NVML_CONFIG]), "overrides", "gpu2.yaml")
    os.makedirs(os.path.dirname(overrides))
    open(overrides, "w").write(text)
    seen, stderr = run_probe(nvml_lib, env, "visible")
    assert len(seen["gpus"]) == 8
    assert stderr == (f"mock NVML: ignoring overrides {overrides}: {overrides[:-5]}.nvml: missing: "
                      f"run 'mokka compile --companion {overrides}'\n" if named else "")


def test_a_process_without_stdin_reads_its_node_as_any_other(nvml_lib, tmp_path):
    # A daemon may close descriptor 0; the library's next open is then 0, a descriptor
    # like any other (the profile, its companion, the overrides directory and documents).
    env = _stage(tmp_path, "a100", overrides={None: "name: Overridden\n", 2: "serial: '42'\n"},
                 env={names.ENV_NVML_CLOCK: "1700000000"})   # readings move: both runs read one second
    with_stdin, stderr = run_probe(nvml_lib, env, "dump")
    gpus = with_stdin["gpus"]
    assert stderr == "" and (gpus[1]["Name"], gpus[2]["Name"], gpus[2]["Serial"]) == ("Overridden", "Overridden", "42")
    res = subprocess.run([sys.executable, PROBE, "dump"], env=clean_env(nvml_lib, env), capture_output=True,
                         text=True, timeout=60, preexec_fn=lambda: os.close(0))
    assert (res.returncode, res.stderr) == (0, "")
    assert json.loads(res.stdout) == with_stdin
