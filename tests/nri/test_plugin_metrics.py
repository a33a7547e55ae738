"""The plugin's /metrics: Prometheus text that the Prometheus parser reads, and
counters that move with the containers the runtime creates and the connections it drops.

The real ``python -m mokka nri-plugin`` process against the fake runtime (the
real wire format); tests/integration/test_metrics.py does the same through
the real containerd.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mokka.core import names
from mokka.nri.codec import ttrpc
from mokka.nri.proto import nri_pb2
from tests.netutil import http_get
from tests.nri.fakeruntime import FakeRuntime
from tests.nri.pluginproc import PluginProcess
from tests.waiting import wait_until


def scrape(port: int) -> dict:
    """(sample name, sorted labels) -> value, read by prometheus-client's parser."""
    status, body = http_get(port, "/metrics")
    assert status == 200, body
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def pod(name: str, namespace: str = "default", **annotations) -> nri_pb2.PodSandbox:
    return nri_pb2.PodSandbox(id=name, name=name, namespace=namespace, annotations=annotations)


@pytest.fixture
def plugin(tmp_path):
    p = PluginProcess(tmp_path)
    yield p
    p.close()


def test_metrics_parse_and_count_each_container_by_outcome(plugin):
    link = plugin.link()
    before = scrape(plugin.port)
    assert before[("mokka_nri_containers_injected_total", ())] == 0
    assert before[("mokka_nri_containers_skipped_total", (("reason", "excluded_namespace"),))] == 0
    assert before[("mokka_nri_registered", ())] == 1

    ctr = nri_pb2.Container(id="c", name="app")
    for p in (pod("plain"), pod("system", "kube-system"), pod("plain-2"),
              pod("out", **{names.ANNOTATION_OPT_OUT: "false", names.ANNOTATION_DEVICES: "true"})):
        assert link.create_container(p, ctr)[0].code == ttrpc.OK

    # The request time is observed once the reply is sent, so it may trail the reply.
    wait_until(lambda: scrape(plugin.port)[("mokka_nri_request_seconds_count", ())] == 4,
               "the fourth reply's request time observed", timeout=10)
    after = scrape(plugin.port)
    skipped = lambda reason: after[("mokka_nri_containers_skipped_total", (("reason", reason),))]
    assert skipped("nothing_selected") == 2
    assert skipped("excluded_namespace") == 1
    assert skipped("opt_out") == 1
    assert after[("mokka_nri_create_container_total", ())] == 4
    assert after[("mokka_nri_decision_seconds_count", ())] == 4
    assert after[("mokka_nri_request_seconds_count", ())] == 4
    assert after[("mokka_nri_request_seconds_bucket", (("le", "+Inf"),))] == 4
    assert after[("mokka_nri_info", (("runtime", "containerd"), ("version", "1.7.24")))] == 1


def test_a_reconnect_is_counted(plugin):
    plugin.link()
    assert scrape(plugin.port)[("mokka_nri_reconnects_total", ())] == 0
    plugin.runtime.close()                   # containerd restarts: the socket goes ...
    wait_until(lambda: scrape(plugin.port)[("mokka_nri_registered", ())] == 0,
               "mokka_nri_registered 0 once the runtime is gone", timeout=10)
    plugin.runtime = FakeRuntime(plugin.path)          # ... and comes back
    plugin.link()
    assert scrape(plugin.port)[("mokka_nri_reconnects_total", ())] == 1
