"""The nri-plugin command line: flags, env fallbacks, derivations, errors,
and the real process answering SIGTERM with exit 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path, wait_until  # noqa: E402

from mokka.cmd import nri as cmd  # noqa: E402
from mokka.core import log, names  # noqa: E402
from mokka.core.overlay import Overlay  # noqa: E402
from tests.netutil import free_port, http_get  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    monkeypatch.setattr(cmd, "serve", lambda s: seen.append(s) or 0)

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
    assert s.host == cmd.HostPaths(host.dev, host.topology,
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
    (["--device-injection-mode=nodes"], "invalid --device-injection-mode 'nodes'"),
    (["--agent-staged-url=http://x/stagedz"], "must be set together"),
    (["--staging-lock-path=/l"], "must be set together"),
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




def test_the_process_registers_serves_probes_and_exits_0_on_sigterm():
    path = short_socket_path()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env["PYTHONPATH"] = ROOT
    with FakeRuntime(path) as runtime:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mokka", "nri-plugin", f"--socket-path={path}",
             "--plugin-index=33", "--plugin-name=mokka-proc", f"--health-addr=127.0.0.1:{port}",
             "--log-format=plain"],
            env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
        try:
            link = runtime.wait_link(timeout=20)
            assert link.wait_registered(timeout=20).plugin_idx == "33"
            link.configure()
            assert wait_until(lambda: http_get(port, "/readyz")[0] == 200, timeout=10)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0
            assert link.wait_closed()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            proc.stderr.close()
    remove_socket_dir(path)


# --- decision_handler: the glue between driver, gate, decision and convert ------

class FakeGate:
    """staged(runtime) as the command builds it: yields (view, reason)."""

    def __init__(self, view, reason=""):
        self.view, self.reason, self.entered, self.held = view, reason, 0, False

    def __call__(self, runtime):
        gate = self

        class Held:
            def __enter__(self):
                gate.entered += 1
                gate.held = True
                return gate.view, gate.reason

            def __exit__(self, *exc):
                gate.held = False
        return Held()


@pytest.fixture
def fake_adjust(monkeypatch):
    """inject.adjust replaced by a recorder (the decision has its own tests)."""
    import mokka.nri.inject as inject
    from mokka.nri.inject import model
    seen, probes = [], {}

    def adjust(config, pod, container, view, selection=None):
        seen.append((pod, container, view, probes["held"]()))
        return model.Decision(model.Adjustment(env=(("A", "1"),),
                                               cdi_devices=(names.CDI_MOCK_DEVICE_ALL,)),
                              "gpu", ("a warning",))
    probes["held"] = lambda: None
    monkeypatch.setattr(inject, "adjust", adjust)
    return seen, probes


def _pbs(namespace="default"):
    from mokka.nri.proto import nri_pb2
    return (nri_pb2.PodSandbox(namespace=namespace, name="p",
                               annotations={names.ANNOTATION_DEVICES: "true"}),
            nri_pb2.Container(name="c"))


@pytest.mark.parametrize("accepts_cdi", [True, False])
def test_decision_handler_decides_under_the_gate_and_converts(fake_adjust, accepts_cdi):
    from mokka.nri.inject import model
    from mokka.nri.runtime_info import RuntimeInfo
    seen, probes = fake_adjust
    gate = FakeGate(model.NodeView())
    probes["held"] = lambda: gate.held
    from mokka.nri.proto import nri_pb2
    out = nri_pb2.CreateContainerResponse.FromString(cmd.decision_handler(model.Config(), gate)(
        *_pbs(), RuntimeInfo(accepts_cdi=accepts_cdi))).adjust
    pod, ctr, view, held = seen[0]
    assert (pod.namespace, ctr.name, held) == ("default", "c", True)
    assert [(kv.key, kv.value) for kv in out.env] == [("A", "1")]
    assert len(out.CDI_devices) == (1 if accepts_cdi else 0)


def test_decision_handler_skips_before_the_gate(fake_adjust):
    from mokka.nri.inject import model
    from mokka.nri.runtime_info import RuntimeInfo
    gate = FakeGate(model.NodeView())
    assert cmd.decision_handler(model.Config(), gate)(*_pbs("kube-system"), RuntimeInfo()) is None
    assert gate.entered == 0 and fake_adjust[0] == []


def test_decision_handler_leaves_containers_alone_while_not_staged(fake_adjust, caplog):
    from mokka.nri.inject import model
    from mokka.nri.runtime_info import RuntimeInfo
    handle = cmd.decision_handler(model.Config(), FakeGate(None, "node agent is staging"))
    with caplog.at_level("WARNING"):
        assert handle(*_pbs(), RuntimeInfo()) is None
    assert fake_adjust[0] == []
    record = [r for r in caplog.records if "left unmodified" in r.getMessage()][0]
    assert record.fields == {"reason": "node agent is staging", "namespace": "default",
                             "pod": "p", "container": "c"}


def test_make_handler_wires_the_real_gate_and_node_view(settings_of, tmp_path):
    from mokka.nri.runtime_info import RuntimeInfo
    s = settings_of(f"--overlay-host-path={tmp_path}/overlay",
                    f"--cdi-spec-host-path={tmp_path}/cdi/spec.yaml")
    handle, ready = cmd.make_handler(s)
    assert ready()[0] is True                       # gate not configured: open
    out = handle(*_pbs(), RuntimeInfo())            # nothing staged: at most degraded
    assert out is None or isinstance(out, bytes)


def test_make_handler_gate_closed_leaves_containers_and_fails_readiness(settings_of, tmp_path,
                                                                        caplog):
    from mokka.nri.runtime_info import RuntimeInfo
    s = settings_of(f"--overlay-host-path={tmp_path}/overlay",
                    f"--staging-lock-path={tmp_path}/staging.lock",
                    f"--agent-staged-url=http://127.0.0.1:{free_port()}/stagedz")
    handle, ready = cmd.make_handler(s)
    ok, reason = ready()
    assert ok is False and "unreachable" in reason
    with caplog.at_level("WARNING"):
        assert handle(*_pbs(), RuntimeInfo()) is None
    assert any("left unmodified" in r.getMessage() for r in caplog.records)


class Counted:
    """What decision_handler reports to the plugin's /metrics."""

    def __init__(self):
        self.seen = []

    def injected(self):
        self.seen.append("injected")

    def skipped(self, reason):
        self.seen.append(reason)

    def gate_checked(self, outcome):
        self.seen.append(f"gate:{outcome}")


def test_decision_handler_counts_each_container_by_outcome(fake_adjust):
    from mokka.nri.inject import model
    from mokka.nri.runtime_info import RuntimeInfo
    counted = Counted()
    open_gate = cmd.decision_handler(model.Config(), FakeGate(model.NodeView()), counted)
    closed = cmd.decision_handler(model.Config(), FakeGate(None, "node agent is staging"), counted)
    open_gate(*_pbs(), RuntimeInfo())
    open_gate(*_pbs("kube-system"), RuntimeInfo())
    closed(*_pbs(), RuntimeInfo())
    assert counted.seen == ["injected", "excluded_namespace", "not_staged"]


@pytest.mark.parametrize("verdict, outcome", [
    ((True, "node agent reports the tree staged"), "open"),
    ((False, "node agent is staging (staging lock held)"), "staging"),
    ((False, "node agent unreachable at http://x/stagedz: refused"), "unreachable"),
    ((False, "staging lock unavailable: EACCES"), "lock_unavailable"),
    ((False, "node agent not staged (HTTP 503): tearing down"), "not_staged"),
])
def test_gate_outcome_is_a_bounded_label(verdict, outcome):
    from mokka.nri.gate import Verdict, outcome as outcome_of
    assert outcome_of(Verdict(*verdict)) == outcome
