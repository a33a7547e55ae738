"""/metrics of the running node agent and NRI plugin, as the DaemonSet runs them,
while containers are created through the real containerd: both parse with the
Prometheus text parser and their counters move with what happened."""

from __future__ import annotations

import os
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

from mokka.core import names
from mokka.core.overlay import Overlay

from tests.integration import runtime as rt
from tests.integration.test_nri_plugin import PluginProcess, make, mounts_at
from tests.netutil import free_port, http_get


def scrape(port: int) -> dict:
    status, body = http_get(port, "/metrics")
    assert status == 200, body
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def test_agent_and_plugin_metrics_move_with_containers(containerd, zipapp, tmp_path):
    from tests.integration.conftest import mokka_env

    root = str(tmp_path / "node")
    os.makedirs(root)
    agent_port = free_port()
    lock = os.path.join(str(tmp_path), "staging.lock")
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
        passes_ok = ("mokka_agent_reconcile_passes_total", (("result", "ok"),))
        # /stagedz opens after Stage; the pass is counted once Apply is done too.
        rt.wait_until(lambda: http_get(agent_port, "/stagedz")[0] == 200
                      and scrape(agent_port)[passes_ok] == 1, timeout=20)
        agent_metrics = scrape(agent_port)
        assert agent_metrics[("mokka_agent_reconcile_duration_seconds_count", ())] >= 1
        assert agent_metrics[("mokka_agent_generation", ())] >= 1
        assert agent_metrics[("mokka_agent_stage_errors_total", (("simulator", "gpudriver"),))] == 0
        assert agent_metrics[("mokka_agent_daemon_up", (("simulator", "kernellog"),))] == 1

        plugin.start()
        before = scrape(plugin.port)
        assert before[("mokka_nri_containers_injected_total", ())] == 0
        cri = containerd.client()
        _, _, spec = make(cri, "metrics-gpu", {names.ANNOTATION_DEVICES: "true"})
        assert mounts_at(spec, "/")
        make(cri, "metrics-plain")
        after = scrape(plugin.port)
        assert after[("mokka_nri_containers_injected_total", ())] == 1
        assert after[("mokka_nri_containers_skipped_total", (("reason", "nothing_selected"),))] == 1
        assert after[("mokka_nri_gate_checks_total", (("outcome", "open"),))] == 1
        assert after[("mokka_nri_create_container_total", ())] == 2
        assert after[("mokka_nri_decision_seconds_count", ())] == 2
        assert after[("mokka_nri_request_seconds_count", ())] == 2
        assert after[("mokka_nri_info", (("runtime", "containerd"), ("version", "1.7.24~ds1")))] == 1
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
