"""The containerd configuration edits: table tests of the pure functions, and the
version 3 (containerd 2.x) output pinned by golden files (no 2.x runs here)."""

from __future__ import annotations

import os
import tomllib

import pytest

from mokka.agent.containerd import config as cc
from mokka.core import names

S = cc.Settings()
GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "containerd")
IMPORT = '"/etc/containerd/conf.d/*.toml"'


@pytest.mark.parametrize("host,expect", [
    (None, f"version = 2\nimports = [{IMPORT}]\n"),
    ("version = 2\n", f"version = 2\nimports = [{IMPORT}]\n"),
    ("# the host's note\nversion = 2\n\n[grpc]\n  address = \"/run/x.sock\" # keep me\n",
     f"# the host's note\nversion = 2\nimports = [{IMPORT}]\n\n[grpc]\n  address = \"/run/x.sock\" # keep me\n"),
    ('version = 2\nimports = ["/etc/other/*.toml"] # theirs\n',
     f'version = 2\nimports = ["/etc/other/*.toml", {IMPORT}] # theirs\n'),
], ids=["no config: a minimal one that imports the dir",
        "no imports key: one is added",
        "comments and layout survive the edit",
        "an entry that does not cover the dir gets ours beside it"])
def test_edit_main_adds_the_import(host, expect):
    assert cc.edit_main(host, S) == expect


@pytest.mark.parametrize("host", [
    'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
    'version = 2\nimports = ["/etc/containerd/conf.d/50-mokka.toml"]\n',
    'version = 2\nimports = ["conf.d/*.toml"]\n',
    'version = 2\nimports = ["/etc/containerd/conf.d/*"]\n',
], ids=["the same glob", "our file by name", "a relative entry, from the config's dir",
        "a wider glob"])
def test_edit_main_leaves_a_covering_config_byte_for_byte(host):
    assert cc.edit_main(host, S) == host


@pytest.mark.parametrize("entry,covered", [
    ("/etc/containerd/*/*.toml", True),
    ("/etc/containerd/*.toml", False),
    ("/etc/containerd/conf.d/*.conf", False),
    ("/etc/containerd/conf.d", False),
], ids=["a glob per segment covers", "a glob one level up does not (no recursion)",
        "another suffix does not", "the bare dir does not"])
def test_covers_matches_as_containerd_globs(entry, covered):
    assert cc.covers([entry], S.drop_in, S.config) is covered


@pytest.mark.parametrize("host,error", [
    ("version = 2\nimports = \"/etc/x\"\n", "imports must be a list"),
    ("version = 9\n", "version 9 is not 1, 2 or 3"),
    ("version = 2\n[grpc\n", "is not valid TOML"),
], ids=["imports not a list", "unknown version", "not TOML"])
def test_bad_host_config_is_one_line_naming_the_file_and_the_fix(host, error):
    with pytest.raises(cc.ConfigError) as info:
        cc.drop_in([(S.config, host)], S) if "version = 9" in host else cc.edit_main(host, S)
    text = str(info.value)
    assert error in text and S.config in text and "--container-runtime=none" in text
    assert "\n" not in text


def plugins(text: str) -> dict:
    return tomllib.loads(text)["plugins"]


CRI, NRI = names.CONTAINERD_CRI_PLUGIN_V2, names.CONTAINERD_NRI_PLUGIN


HOST_V2 = f"""version = 2
[plugins."{CRI}"]
  sandbox_image = "registry.example/pause:3.9"
  cdi_spec_dirs = ["/etc/cdi"]
  [plugins."{CRI}".registry.mirrors."docker.io"]
    endpoint = ["https://mirror.example"]
[plugins."{NRI}"]
  disable = true
  plugin_registration_timeout = "7s"
"""


def test_drop_in_copies_the_host_tables_then_turns_cdi_and_nri_on():
    out = plugins(cc.drop_in([(S.config, HOST_V2)], S))
    assert out == {
        CRI: {"sandbox_image": "registry.example/pause:3.9",
              "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"], "enable_cdi": True,
              "registry": {"mirrors": {"docker.io": {"endpoint": ["https://mirror.example"]}}}},
        NRI: {"disable": False, "plugin_registration_timeout": "7s",
              "socket_path": "/var/run/nri/nri.sock"},
    }


@pytest.mark.parametrize("sources,settings,expect_cri,expect_nri", [
    ([], S, {"enable_cdi": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]},
     {"disable": False, "socket_path": "/var/run/nri/nri.sock"}),
    ([(S.config, "version = 2\n")], cc.Settings(cdi_spec_dir="/run/mine", nri_socket=""),
     {"enable_cdi": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi", "/run/mine"]}, None),
    ([(S.config, f'version = 2\n[plugins."{CRI}"]\nsandbox_image = "a"\n'),
      ("/etc/containerd/conf.d/10-x.toml", f'version = 2\n[plugins."{CRI}"]\nsandbox_image = "b"\n')],
     S, {"sandbox_image": "b", "enable_cdi": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]},
     {"disable": False, "socket_path": "/var/run/nri/nri.sock"}),
], ids=["no host config: containerd's defaults plus ours",
        "no NRI socket: NRI's table is not touched; our spec dir is added",
        "the last file that sets a table wins, as in containerd"])
def test_drop_in_derivation(sources, settings, expect_cri, expect_nri):
    out = plugins(cc.drop_in(sources, settings))
    assert out[CRI] == expect_cri
    assert out.get(NRI) == expect_nri


def test_a_version_1_host_gets_a_version_1_file_under_the_short_names():
    """containerd 1.7 refuses a version 2 import into a version 1 main file."""
    host = '[plugins.cri]\nsandbox_image = "v1"\n[plugins.nri]\nplugin_path = "/p"\n'
    doc = tomllib.loads(cc.drop_in([(S.config, host)], S))
    assert doc["version"] == 1
    assert doc["plugins"] == {
        "cri": {"sandbox_image": "v1", "enable_cdi": True, "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]},
        "nri": {"plugin_path": "/p", "disable": False, "socket_path": "/var/run/nri/nri.sock"}}


def test_drop_in_is_version_2_for_containerd_1_7_and_starts_with_the_header():
    text = cc.drop_in([(S.config, HOST_V2)], S)
    assert tomllib.loads(text)["version"] == 2
    assert text.startswith("# Written by Mokka's node agent")


HANDLER = f"""version = 2
[plugins."{CRI}"]
  sandbox_image = "registry.example/pause:3.9"
  enable_cdi = true
  [plugins."{CRI}".containerd]
    default_runtime_name = "nvidia"
    [plugins."{CRI}".containerd.runtimes.nvidia]
      runtime_type = "io.containerd.runc.v2"
      [plugins."{CRI}".containerd.runtimes.nvidia.options]
        BinaryName = "/usr/bin/nvidia-container-runtime"
"""


def test_drop_in_keeps_nvidia_ctks_handler_and_adds_nri():
    out = plugins(cc.drop_in([(S.config, HOST_V2)], S, handler=HANDLER))
    assert out[CRI]["containerd"]["default_runtime_name"] == "nvidia"
    assert out[CRI]["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == \
        "/usr/bin/nvidia-container-runtime"
    assert out[CRI]["enable_cdi"] is True
    assert out[CRI]["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert out[NRI] == {"disable": False, "plugin_registration_timeout": "7s",
                        "socket_path": "/var/run/nri/nri.sock"}


@pytest.mark.parametrize("case", ["plain", "handler"])
def test_version_3_golden_files(case):
    """containerd 2.x (config version 3): no runtime here, so golden files pin the output."""
    def read(name):
        with open(os.path.join(GOLDEN, f"v3-{name}")) as f:
            return f.read()
    host = read("host.toml")
    handler = read("handler.toml") if case == "handler" else None
    assert cc.edit_main(host, S) == read("main.toml")
    assert cc.drop_in([(S.config, host)], S, handler=handler) == read(f"drop-in-{case}.toml")
    assert names.CONTAINERD_CRI_PLUGIN_V3 in plugins(read(f"drop-in-{case}.toml"))
