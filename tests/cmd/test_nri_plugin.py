"""The nri-plugin command line: flags, env fallbacks, derivations, errors,
and the real process answering SIGTERM with exit 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from mokka.cmd import nri as cmd
from mokka.core import log, names
from mokka.core.overlay import Overlay
from mokka.nri import compose
from tests.conftest import REPO
from tests.netutil import free_port, http_get
from tests.nri.fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path
from tests.waiting import wait_until

ENV_PREFIXES = ("MOKKA_", "NRI_PLUGIN_", "NODE_NAME")


@pytest.fixture
def settings_of(monkeypatch):
    """Run main() with ``serve`` stubbed; return the Settings it would serve."""
    for key in list(os.environ):
        if key.startswith(ENV_PREFIXES):
            monkeypatch.delenv(key)
    # Validate like log.configure, without touching the test run's handlers.
    monkeypatch.setattr(log, "configure",
                        lambda level, fmt, *a: (log.parse_level(level), log.parse_format(fmt)))
    seen = []
    monkeypatch.setattr(compose, "serve", lambda s: seen.append(s) or 0)

    def run(*args, env=None):
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        assert cmd.main(list(args)) == 0
        return seen[-1]
    return run


def test_defaults_come_from_names(settings_of):
    s = settings_of()
    host, mount = Overlay(names.OVERLAY_HOST_PATH), Overlay(names.OVERLAY_MOUNT_PATH)
    assert (s.plugin.socket_path, s.plugin.name, s.plugin.index) == (
        names.NRI_SOCKET_PATH, names.NRI_PLUGIN_NAME, names.NRI_PLUGIN_INDEX)
    assert s.health_addr == names.NRI_HEALTH_ADDR
    assert s.config.excluded_namespaces == frozenset(names.NRI_EXCLUDED_NAMESPACES)
    assert s.config.ld_preload_shims == names.LD_PRELOAD_SHIMS
    assert s.config.topology_mount_path == mount.topology
    assert s.config.cdi_device_name == names.CDI_MOCK_DEVICE_ALL
    assert s.config.device_injection_mode == "raw"
    assert s.config.cdi_annotation_namespaces == frozenset()
    assert s.config.toolkit_cdi_annotations is False
    assert s.config.overlay_host_path == host.root
    assert s.host == compose.HostPaths(host.dev, host.topology,
                                   f"{names.CDI_SPEC_DIR}/{names.CDI_SPEC_MOCK_FILE}",
                                   host.imex_channels)
    assert (s.agent_staged_url, s.staging_lock_path) == ("", "")


def test_overlay_derivations_follow_the_final_overlay_flags(settings_of):
    s = settings_of("--overlay-host-path=/h", env={"MOKKA_NRI_OVERLAY_MOUNT_PATH": "/m"})
    assert s.host.devices == Overlay("/h").dev
    assert s.host.topology == Overlay("/h").topology
    assert s.host.imex_channels == Overlay("/h").imex_channels
    assert s.config.topology_mount_path == Overlay("/m").topology
    assert (s.config.overlay_host_path, s.config.overlay_mount_path) == ("/h", "/m")


def test_explicit_paths_beat_derivations(settings_of):
    s = settings_of("--device-host-path=/d", "--topology-host-path=/t.yaml",
                    "--topology-mount-path=/tm.yaml", "--imex-channel-host-path=/i")
    assert (s.host.devices, s.host.topology, s.host.imex_channels) == ("/d", "/t.yaml", "/i")
    assert s.config.topology_mount_path == "/tm.yaml"


def test_flag_wins_over_env(settings_of):
    s = settings_of("--plugin-name=flag", env={"MOKKA_NRI_PLUGIN_NAME": "env",
                                               "MOKKA_NRI_PLUGIN_INDEX": "07",
                                               "NODE_NAME": "node-1"})
    assert (s.plugin.name, s.plugin.index, s.config.node_name) == ("flag", "07", "node-1")


@pytest.mark.parametrize("env,attr,value", [
    ("MOKKA_NRI_HEALTH_ADDR", "health_addr", ""),
    ("MOKKA_NRI_EXCLUDED_NAMESPACES", "excluded", frozenset()),
    ("MOKKA_NRI_LD_PRELOAD_SHIMS", "shims", ()),
], ids=["empty health addr disables probes", "empty exclusions exclude nothing",
        "empty shim list preloads nothing"])
def test_an_empty_env_value_is_a_value(settings_of, env, attr, value):
    s = settings_of(env={env: ""})
    got = {"health_addr": s.health_addr, "excluded": s.config.excluded_namespaces,
           "shims": s.config.ld_preload_shims}[attr]
    assert got == value


def test_lists_gates_and_pairs(settings_of):
    s = settings_of("--excluded-namespaces= mokka , kube-system,", "--device-injection-mode=cdi",
                    "--cdi-annotation-namespaces=gpu-operator",
                    "--feature-gates=ToolkitCDIAnnotations=true",
                    "--agent-staged-url=http://127.0.0.1:9091/stagedz",
                    "--staging-lock-path=/run/mokka/staging.lock")
    assert s.config.excluded_namespaces == {"mokka", "kube-system"}
    assert s.config.device_injection_mode == "cdi"
    assert s.config.cdi_annotation_namespaces == {"gpu-operator"}
    assert s.config.toolkit_cdi_annotations is True
    assert s.staging_lock_path == "/run/mokka/staging.lock"


@pytest.mark.parametrize("args,message", [
    (["--plugin-index=7"], "invalid --plugin-index"),
    (["--plugin-name="], "--plugin-name must not be empty"),
    (["--health-addr=8080"], "invalid --health-addr"),
    (["--feature-gates=Nope=true"], "unknown feature gate"),
    (["--log-format=xml"], "invalid --log-format"),
])
def test_startup_errors(settings_of, capsys, args, message):
    assert cmd.main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("nri-plugin: ") and message in err


@pytest.mark.parametrize("args", [["--agent-staged-url=http://x/stagedz"], ["--staging-lock-path=/l"]])
def test_the_agent_s_url_and_lock_go_together(settings_of, capsys, args):
    assert cmd.main(args) == 2
    assert capsys.readouterr().err == ("mokka nri-plugin: --agent-staged-url and --staging-lock-path must be "
                                       "set together (see 'mokka nri-plugin --help')\n")


def test_a_probe_port_in_use_is_one_line_and_exit_1(tmp_path):
    import socket
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env["PYTHONPATH"] = REPO
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "mokka", "nri-plugin", f"--socket-path={tmp_path}/nri.sock",
             f"--overlay-host-path={tmp_path}/overlay", f"--health-addr=127.0.0.1:{port}"],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith(f"nri-plugin: cannot serve probes on '127.0.0.1:{port}': ")
    assert done.stderr.count("\n") == 1, done.stderr


def test_the_process_registers_serves_probes_and_exits_0_on_sigterm():
    path = short_socket_path()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env["PYTHONPATH"] = REPO
    with FakeRuntime(path) as runtime:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mokka", "nri-plugin", f"--socket-path={path}",
             "--plugin-index=33", "--plugin-name=mokka-proc", f"--health-addr=127.0.0.1:{port}",
             "--log-format=plain"],
            env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)
        try:
            link = runtime.wait_link(timeout=20)
            assert link.wait_registered(timeout=20).plugin_idx == "33"
            link.configure()
            wait_until(lambda: http_get(port, "/readyz")[0] == 200, "the plugin's /readyz 200",
                       timeout=10)
            proc.send_signal(signal.SIGTERM)
            try:                    # drained as it exits: a full pipe must not hold it
                _, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                pytest.fail(f"the plugin did not exit within 30 s of SIGTERM; its stderr: {err[-3000:]}")
            assert proc.returncode == 0, err[-3000:]
            assert link.wait_closed()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            if proc.stderr and not proc.stderr.closed:
                proc.stderr.close()
    remove_socket_dir(path)
