"""The real nri-plugin process on a real containerd's NRI socket, and what the tests
read back: containerd's log of the registration, the stored OCI spec of a container."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

from mokka.core import names
from mokka.core.overlay import Overlay, container_overlay
from tests.integration.nodes import mokka_env
from tests.integration.pods import container_spec, create_container, run_pod
from tests.netutil import free_port, http_get
from tests.waiting import wait_until

PLUGIN_NAME = "mokka-test"
PLUGIN_INDEX = "10"
MOUNT = container_overlay()


class PluginProcess:
    """The zipapp's nri-plugin on ``socket_path`` for the staged node, probes on a free port."""

    def __init__(self, zipapp: str, socket_path: str, overlay: Overlay, node_root: str, *extra: str):
        self.port = free_port()
        self.log_path = os.path.join(os.path.dirname(socket_path), f"plugin-{self.port}.log")
        self.argv = [zipapp, "nri-plugin", "--socket-path", socket_path,
                     "--plugin-name", PLUGIN_NAME, "--plugin-index", PLUGIN_INDEX,
                     "--overlay-host-path", overlay.root,
                     "--cdi-spec-host-path",
                     os.path.join(node_root, names.CDI_SPEC_DIR.lstrip("/"), names.CDI_SPEC_MOCK_FILE),
                     "--health-addr", f"127.0.0.1:{self.port}", "--log-format", "plain", *extra]
        self.proc = None

    def start(self) -> "PluginProcess":
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 15.0) -> None:
        wait_until(lambda: http_get(self.port, "/readyz")[0] == 200,
                   lambda: f"the plugin's /readyz 200; log:\n{self.log_text()}", timeout=timeout)

    def log_text(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM) -> int | None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode if self.proc else None


@contextlib.contextmanager
def plugin_for(containerd, zipapp: str, staged: tuple[str, Overlay]):
    """The plugin for a node staged as ``(root, overlay)``, stopped after."""
    root, overlay = staged
    plugin = PluginProcess(zipapp, containerd.nri_socket, overlay, root).start()
    try:
        yield plugin
    finally:
        plugin.stop()


def env_of(spec: dict) -> dict:
    env = {}
    for item in spec["process"].get("env", []):
        key, _, value = item.partition("=")
        env[key] = value          # the last duplicate is what the process sees
    return env


def mounts_at(spec: dict, destination_prefix: str) -> list[dict]:
    return [m for m in spec.get("mounts", []) if m["destination"].startswith(destination_prefix)]


def device_paths(spec: dict) -> list[str]:
    return sorted(d["path"] for d in (spec.get("linux") or {}).get("devices") or [])


def registrations(containerd) -> int:
    """How often containerd logged our registration (its log quotes with backslashes)."""
    return containerd.log_text().count(f'registered as \\"{PLUGIN_INDEX}-{PLUGIN_NAME}\\"')


def make(cri, name, annotations=None, namespace="default", **kwargs):
    pod_id, pod_config = run_pod(cri, name, namespace, annotations)
    cid = create_container(cri, pod_id, pod_config, "app", None, **kwargs)
    return pod_id, cid, container_spec(cri, cid)


@contextlib.contextmanager
def gated_node(containerd, zipapp, tmp_path):
    """A t4 node's agent (serving /stagedz, holding the staging lock) and a plugin gated on
    it, as the DaemonSet pairs them: yields (agent Popen, agent port, PluginProcess not yet
    started). Both are stopped after: the agent by SIGTERM (its teardown), killed if stuck."""
    root = str(tmp_path / "node")
    os.makedirs(root)
    agent_port = free_port()
    lock = os.path.join(str(tmp_path), "staging.lock")     # outside the overlay workloads see
    agent = subprocess.Popen(
        [sys.executable, "-m", "mokka", "node-agent", "--host-root", root, "--profile", "t4",
         "--health-addr", f"127.0.0.1:{agent_port}", "--staging-lock-path", lock,
         "--log-format", "plain"], env=mokka_env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    overlay = Overlay(os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/")))
    plugin = PluginProcess(zipapp, containerd.nri_socket, overlay, root,
                           "--agent-staged-url", f"http://127.0.0.1:{agent_port}/stagedz",
                           "--staging-lock-path", lock)
    try:
        yield agent, agent_port, plugin
    finally:
        if agent.poll() is None:
            agent.terminate()
            try:
                agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
        if plugin.proc is not None:
            plugin.stop()
