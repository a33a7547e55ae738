"""The zipapp: dispatch by name or subcommand, help, errors, and a light start-up."""

import json
import os
import subprocess
import sys

import pytest

from mokka.cmd.main import COMMANDS
from tests.conftest import REPO, run_mokka


def test_help_lists_every_command(zipapp):
    out = subprocess.run([zipapp, "--help"], capture_output=True, text=True, check=True).stdout
    for name in COMMANDS:
        assert f"  {name} " in out


def test_profiles_lists_the_seven(zipapp):
    out = subprocess.run([zipapp, "profiles", "-o", "json"], capture_output=True, text=True,
                         check=True).stdout
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["a100", "h100", "b200", "gb200", "gb300", "l40s", "t4"]
    assert [r["count"] for r in rows] == [8, 8, 8, 8, 8, 8, 4]
    assert [r["default"] for r in rows].count(True) == 1


@pytest.mark.parametrize("link,args,expect", [
    ("nri-plugin", ["--help"], "--socket-path"),
    ("render-cdi", ["--help"], "--host-root"),
], ids=["nri-plugin link runs the plugin", "render-cdi link runs the renderer"])
def test_symlink_name_dispatches(zipapp, tmp_path, link, args, expect):
    os.symlink(zipapp, tmp_path / link)
    result = subprocess.run([str(tmp_path / link), *args], capture_output=True, text=True)
    assert expect in result.stdout + result.stderr
    assert "not built yet" not in result.stderr


def test_nvidia_smi_link_runs_the_shim(zipapp, tmp_path):
    from mokka.core import names
    from mokka.core.compile import compile_profile
    from mokka.engine.flatstate import state_companion
    from mokka.core.profile import load

    loaded = load("t4")
    config = tmp_path / "config.yaml"
    config.write_bytes(loaded.text)
    (tmp_path / "config.nvml").write_bytes(state_companion(compile_profile(loaded)))
    os.symlink(zipapp, tmp_path / "nvidia-smi")
    (tmp_path / "dev").mkdir()
    env = dict(os.environ, **{names.ENV_NVML_CONFIG: str(config), names.ENV_DEV_ROOT: str(tmp_path)})
    result = subprocess.run([str(tmp_path / "nvidia-smi"), "-L"], capture_output=True, text=True,
                            env=env, check=True)
    assert result.stdout.splitlines() == [
        f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})" for g in compile_profile(loaded)["gpus"]]


def test_unknown_command_is_an_error():
    result = run_mokka("frobnicate")
    assert result.returncode != 0 and "unknown command 'frobnicate'" in result.stderr


def test_bad_log_level_is_one_line_and_exit_1():
    result = run_mokka("profiles", "--log-level", "loud")
    assert result.returncode == 1
    assert result.stderr == "profiles: invalid --log-level 'loud': use debug, info, warn or error\n"


def test_unknown_feature_gate_names_the_known_ones():
    result = run_mokka("profiles", env={"MOKKA_FEATURE_GATES": "Warp=true"})
    assert result.returncode == 1
    assert "unknown feature gate 'Warp'" in result.stderr and "IMEXDownload" in result.stderr


def test_flag_wins_over_environment():
    result = run_mokka("profiles", "--log-format", "plain", env={"MOKKA_LOG_FORMAT": "xml"})
    assert result.returncode == 0


def test_help_imports_no_heavy_modules():
    code = ("import sys; from mokka.cmd.main import main; main(['mokka', '--help']);"
            "heavy = [m for m in ('yaml', 'click', 'google.protobuf', 'grpc') if m in sys.modules];"
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         check=True).stdout
    assert "HEAVY []" in out


def test_every_option_of_every_mokka_command_reads_an_environment_variable():
    """The convention: each flag has an env fallback (the NVIDIA-imitating shims excepted)."""
    import importlib
    missing = []
    for name in ("render-cdi", "compile", "node-agent", "nri-plugin"):
        module = importlib.import_module(COMMANDS[name][0].split(":")[0])
        for param in module.command.params:
            if param.param_type_name == "option" and param.name != "help" and not param.envvar:
                missing.append(f"{name} --{param.name.replace('_', '-')}")
    from mokka.cmd import profiles                # argparse, to start as fast as --help
    for action in profiles.parser("mokka profiles")._actions:
        if action.option_strings and action.dest != "help" and action.dest not in profiles.ENV:
            missing.append(f"profiles {action.option_strings[-1]}")
    assert missing == []


def test_profiles_variables_are_read_and_the_flag_wins():
    assert run_mokka("profiles", env={"MOKKA_OUTPUT": "json"}).stdout.startswith("[")
    assert run_mokka("profiles", "-o", "table", env={"MOKKA_OUTPUT": "json"}).stdout.startswith("PROFILE")
    bad = run_mokka("profiles", env={"MOKKA_OUTPUT": "xml"})
    assert (bad.returncode, bad.stderr) == (1, "profiles: invalid MOKKA_OUTPUT 'xml': use table or json\n")
    bad = run_mokka("profiles", env={"MOKKA_LOG_LEVEL": "loud"})
    assert bad.returncode == 1 and "invalid --log-level 'loud'" in bad.stderr
