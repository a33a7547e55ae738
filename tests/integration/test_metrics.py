"""/metrics of the running node agent and NRI plugin, as the DaemonSet runs them,
while containers are created through the real containerd: both parse with the
Prometheus text parser and their counters move with what happened."""

from __future__ import annotations


from prometheus_client.parser import text_string_to_metric_families

from mokka.core import names

from tests.integration.nriplugin import gated_node, make, mounts_at
from tests.netutil import http_get
from tests.waiting import wait_until


def scrape(port: int) -> dict:
    status, body = http_get(port, "/metrics")
    assert status == 200, body
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def test_agent_and_plugin_metrics_move_with_containers(containerd, zipapp, tmp_path):
    with gated_node(containerd, zipapp, tmp_path) as (_, agent_port, plugin):
        passes_ok = ("mokka_agent_reconcile_passes_total", (("result", "ok"),))
        # /stagedz opens after Stage; the pass is counted once Apply is done too.
        wait_until(lambda: http_get(agent_port, "/stagedz")[0] == 200
                   and scrape(agent_port)[passes_ok] == 1,
                   "the agent staged and one reconcile pass counted ok", timeout=20)
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
