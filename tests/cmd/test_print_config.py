"""``node-agent --print-config`` and ``nri-plugin --print-config``: the real CLI in a
process, every flag and env var validated as a start validates it, one JSON object
out, and nothing on the host touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV_PREFIXES = ("MOKKA_", "NRI_PLUGIN_", "NODE_NAME", "MOCK_IB_PEERS")


def run(*args: str, env: dict[str, str] | None = None, argv0: str | None = None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    clean.update(PYTHONPATH=ROOT, **(env or {}))
    if argv0:       # dispatch on the program name, as the image's nri-plugin link does
        cmd = [sys.executable, "-c", "import sys; from mokka.cmd.main import main; "
               f"sys.argv[0] = {argv0!r}; raise SystemExit(main())", *args]
    else:
        cmd = [sys.executable, "-m", "mokka", *args]
    return subprocess.run(cmd, env=clean, cwd=ROOT, capture_output=True, text=True, timeout=60)


def config(*args: str, **kw) -> dict:
    done = run(*args, **kw)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


# --- node-agent ----------------------------------------------------------------------

def test_agent_defaults():
    c = config("node-agent", "--print-config")
    assert c["command"] == "node-agent" and c["mode"] == "serve"
    assert (c["profile"], c["host_root"], c["overlay_host_path"]) == ("gb300", "/", "/var/lib/nvml-mock")
    assert (c["health_addr"], c["staging_lock_path"]) == (":9091", "/run/mokka/staging.lock")
    assert (c["container_runtime"], c["restart_mode"]) == ("containerd", "systemd")
    assert c["nri_socket_path"] == "/var/run/nri/nri.sock"
    assert c["cdi_spec_dir"] == "/var/run/cdi"
    assert (c["log_level"], c["log_format"]) == ("info", "json")
    assert c["feature_gates"] == {"IMEXDownload": False, "ToolkitCDIAnnotations": False}
    assert c["resolved"]["root_lock"] == "/var/lib/mokka/node-agent.lock"


@pytest.mark.parametrize("args,env,key,want", [
    (["--host-root=/host"], {}, ("resolved", "staging_lock"), "/host/run/mokka/staging.lock"),
    (["--host-root=/host"], {}, ("resolved", "overlay"), "/host/var/lib/nvml-mock"),
    (["--host-root=/host"], {}, ("resolved", "root_lock"), "/host/var/lib/mokka/node-agent.lock"),
    ([], {"MOKKA_AGENT_HOST_ROOT": "/h"}, ("resolved", "cdi_spec_dir"), "/h/var/run/cdi"),
    ([], {"NODE_NAME": "kind-worker"}, ("node_name",), "kind-worker"),
    (["--node-name=flag"], {"NODE_NAME": "env"}, ("node_name",), "flag"),
    ([], {"MOKKA_PROFILE": "/etc/mokka/profile/config.yaml"}, ("profile",),
     "/etc/mokka/profile/config.yaml"),
    (["--container-runtime=none"], {}, ("container_runtime",), "none"),
    ([], {"MOKKA_AGENT_RESTART_MODE": "none"}, ("restart_mode",), "none"),
    (["--nri-socket-path="], {}, ("nri_socket_path",), ""),
    (["--imex-channels=16"], {}, ("imex_channels",), 16),
    (["--shutdown-timeout=25"], {}, ("shutdown_timeout",), 25.0),
    (["--health-addr="], {}, ("health_addr",), ""),
    (["--once"], {}, ("mode",), "once"),
    ([], {"MOKKA_AGENT_TEARDOWN": "1"}, ("mode",), "teardown"),
    (["--ib-relay-peers= 127.0.0.3:18515 ,127.0.0.4:18515"], {}, ("ib_relay_peers",),
     ["127.0.0.3:18515", "127.0.0.4:18515"]),
    (["--feature-gates=IMEXDownload=true"], {}, ("feature_gates", "IMEXDownload"), True),
    ([], {"MOKKA_LOG_LEVEL": "warn", "MOKKA_LOG_FORMAT": "plain"}, ("log_level",), "warning"),
    ([], {"MOKKA_AGENT_PRINT_CONFIG": "true"}, ("command",), "node-agent"),
])
def test_agent_flags_and_env(args, env, key, want):
    c = config("node-agent", *args, *([] if "MOKKA_AGENT_PRINT_CONFIG" in env else ["--print-config"]),
               env=env)
    for k in key:
        c = c[k]
    assert c == want


@pytest.mark.parametrize("args,env,message", [
    (["--health-addr=9091"], {}, "invalid --health-addr '9091'"),
    ([], {"MOKKA_AGENT_HEALTH_ADDR": "localhost"}, "invalid --health-addr 'localhost'"),
    (["--ib-relay-listen=10.0.0.1:18515"], {}, "10.0.0.1"),
    (["--nvidia-smi=/nonexistent/nvidia-smi"], {}, "--nvidia-smi /nonexistent/nvidia-smi: cannot read"),
    (["--feature-gates=Nope=true"], {}, "unknown feature gate 'Nope'"),
    ([], {"MOKKA_LOG_FORMAT": "xml"}, "invalid --log-format 'xml'"),
])
def test_agent_refuses_bad_input_in_one_line(args, env, message):
    done = run("node-agent", "--print-config", *args, env=env)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("node-agent: ") and message in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("args", [["--restart-mode=reboot"], ["--imex-channels=-1"],
                                  ["--container-runtime=crio"]])
def test_agent_click_type_errors_exit_non_zero(args):
    done = run("node-agent", "--print-config", *args)
    assert done.returncode != 0 and done.stdout == ""
    assert args[0].split("=")[0] in done.stderr


def test_agent_print_config_touches_nothing(tmp_path):
    root = tmp_path / "host"
    root.mkdir()
    c = config("node-agent", "--print-config", f"--host-root={root}")
    assert c["host_root"] == str(root)
    assert list(root.iterdir()) == []          # no lock, no overlay, no staging lock


def test_agent_print_config_while_another_agent_holds_the_root(tmp_path):
    """--print-config takes no lock, so it answers beside a running agent."""
    import fcntl
    lock = tmp_path / "var" / "lib" / "mokka" / "node-agent.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        assert config("node-agent", "--print-config", f"--host-root={tmp_path}")["mode"] == "serve"


# --- nri-plugin ----------------------------------------------------------------------

def test_plugin_defaults_and_link_name():
    c = config("--print-config", argv0="/usr/local/bin/nri-plugin")
    assert c["command"] == "nri-plugin"
    assert c == config("nri-plugin", "--print-config")
    assert (c["plugin"]["socket_path"], c["plugin"]["name"], c["plugin"]["index"]) == (
        "/var/run/nri/nri.sock", "mokka-nri-plugin", "10")
    assert c["health_addr"] == ":8080"
    assert c["config"]["excluded_namespaces"] == ["kube-system"]
    assert c["config"]["device_injection_mode"] == "raw"
    assert c["host"] == {"cdi_spec": "/var/run/cdi/nvml-mock-nri.yaml",
                         "devices": "/var/lib/nvml-mock/driver/dev",
                         "imex_channels": "/var/lib/nvml-mock/driver/dev/nvidia-caps-imex-channels",
                         "topology": "/var/lib/nvml-mock/topology/topology.yaml"}
    assert (c["agent_staged_url"], c["staging_lock_path"]) == ("", "")


@pytest.mark.parametrize("args,env,key,want", [
    (["--excluded-namespaces=mokka, kube-system"], {}, ("config", "excluded_namespaces"),
     ["kube-system", "mokka"]),
    ([], {"MOKKA_NRI_EXCLUDED_NAMESPACES": ""}, ("config", "excluded_namespaces"), []),
    (["--plugin-name=nvml-mock"], {}, ("plugin", "name"), "nvml-mock"),
    ([], {"MOKKA_NRI_PLUGIN_INDEX": "42"}, ("plugin", "index"), "42"),
    (["--overlay-host-path=/h"], {}, ("host", "devices"), "/h/driver/dev"),
    (["--overlay-mount-path=/m"], {}, ("config", "topology_mount_path"), "/m/topology/topology.yaml"),
    (["--device-injection-mode=cdi"], {}, ("config", "device_injection_mode"), "cdi"),
    ([], {}, ("config", "infiniband_tier"), "full"),
    ([], {"MOKKA_NRI_INFINIBAND_TIER": "sysfs"}, ("config", "infiniband_tier"), "sysfs"),
    ([], {"NODE_NAME": "kind-worker2"}, ("config", "node_name"), "kind-worker2"),
    (["--agent-staged-url=http://127.0.0.1:9091/stagedz", "--staging-lock-path=/run/mokka/staging.lock"],
     {}, ("agent_staged_url",), "http://127.0.0.1:9091/stagedz"),
    ([], {"MOKKA_NRI_HEALTH_ADDR": ""}, ("health_addr",), ""),
    (["--feature-gates=ToolkitCDIAnnotations=true"], {}, ("config", "toolkit_cdi_annotations"), True),
    ([], {"MOKKA_NRI_PRINT_CONFIG": "1"}, ("command",), "nri-plugin"),
])
def test_plugin_flags_and_env(args, env, key, want):
    c = config("nri-plugin", *args, *([] if "MOKKA_NRI_PRINT_CONFIG" in env else ["--print-config"]),
               env=env)
    for k in key:
        c = c[k]
    assert c == want


@pytest.mark.parametrize("args,message", [
    (["--plugin-index=7"], "invalid --plugin-index '7'"),
    (["--plugin-name="], "--plugin-name must not be empty"),
    (["--health-addr=8080"], "invalid --health-addr '8080'"),
    (["--log-level=loud"], "invalid --log-level 'loud'"),
])
def test_plugin_refuses_bad_input_in_one_line(args, message):
    done = run("nri-plugin", "--print-config", *args)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("nri-plugin: ") and message in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("args, env, message", [
    (["--device-injection-mode=nodes"], {}, "'nodes' is not one of 'raw', 'cdi'"),
    ([], {"MOKKA_NRI_DEVICE_INJECTION_MODE": "CDI"}, "'CDI' is not one of 'raw', 'cdi'"),
    (["--infiniband-tier=verbs"], {}, "'verbs' is not one of 'full', 'sysfs'"),
], ids=["an unknown mode", "a mode from the environment, wrong case", "an unknown tier"])
def test_plugin_choices_are_click_usage_errors_as_the_agent_s(args, env, message):
    done = run("nri-plugin", "--print-config", *args, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize("command, args, line", [
    ("node-agent", ["--once", "--teardown"], "mokka node-agent: --once and --teardown exclude each other "
                                             "(see 'mokka node-agent --help')"),
    ("nri-plugin", ["--agent-staged-url=http://127.0.0.1:9091/stagedz"],
     "mokka nri-plugin: --agent-staged-url and --staging-lock-path must be set together "
     "(see 'mokka nri-plugin --help')"),
], ids=["the agent's exclusive modes", "the plugin's flags that go together"])
def test_flags_that_cannot_go_together_are_usage_errors(command, args, line):
    done = run(command, "--print-config", *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")


def test_plugin_print_config_opens_no_socket(tmp_path):
    sock = tmp_path / "nri.sock"
    c = config("nri-plugin", "--print-config", f"--socket-path={sock}", "--health-addr=127.0.0.1:1")
    assert c["plugin"]["socket_path"] == str(sock)
    assert list(tmp_path.iterdir()) == []
