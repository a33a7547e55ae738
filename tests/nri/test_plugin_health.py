"""Probe answers as pure functions of the reported facts and a clock."""

from __future__ import annotations

import http.client

import pytest

from mokka.core import names
from mokka.nri import runtime_info
from mokka.core.probes import parse_addr
from mokka.nri.health import Health, ProbeServer, serve
from mokka.nri.runtime_info import RuntimeInfo


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_readyz_needs_registration():
    health = Health()
    status, body = health.readyz()
    assert status == 503 and "not registered" in body
    health.set_registered(RuntimeInfo())
    assert health.readyz() == (200, "ok")
    health.clear_registered()
    assert health.readyz()[0] == 503


@pytest.mark.parametrize("gate,expected", [
    (lambda: (True, ""), (200, "ok")),
    (lambda: (False, "node agent has not staged the tree"),
     (503, "node agent has not staged the tree")),
    (lambda: (False, ""), (503, "not ready")),
    (lambda: 1 / 0, (503, "readiness check failed: division by zero")),
], ids=["gate open", "gate closed names its reason", "gate closed without reason",
        "a failing gate fails the probe"])
def test_readyz_also_follows_the_gate(gate, expected):
    health = Health(gate_ready=gate)
    health.set_registered(RuntimeInfo())
    assert health.readyz() == expected


@pytest.mark.parametrize("runtime,threshold", [
    (None, 2 * names.NRI_REQUEST_TIMEOUT_FALLBACK_S),
    (RuntimeInfo(request_timeout_s=1.5), 3.0),
], ids=["no timeout reported: 2s fallback, 4s threshold", "twice the reported timeout"])
def test_healthz_fails_only_past_twice_the_request_timeout(runtime, threshold):
    clock = Clock()
    health = Health(now=clock)
    if runtime:
        health.set_registered(runtime)
    assert health.healthz() == (200, "ok")           # nothing in flight
    with health.in_flight():
        clock.t += threshold
        assert health.healthz() == (200, "ok")       # exactly at the threshold: fine
        clock.t += 0.5
        status, body = health.healthz()
        assert status == 503
        assert f"{threshold + 0.5:.1f}s" in body and f"{threshold:.1f}s threshold" in body
    assert health.healthz() == (200, "ok")


def test_healthz_watches_the_oldest_handler():
    clock = Clock()
    health = Health(now=clock)
    old = health.begin()
    clock.t += 3
    health.begin()
    clock.t += 1.5
    assert health.healthz()[0] == 503
    health.end(old)
    assert health.healthz()[0] == 200


@pytest.mark.parametrize("addr,parsed", [
    ("", None), (":8080", ("", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)),
    ("[::1]:9000", ("::1", 9000)),
])
def test_parse_addr(addr, parsed):
    assert parse_addr(addr) == parsed


@pytest.mark.parametrize("addr", ["8080", "host:", "host:port", ":70000"])
def test_parse_addr_rejects(addr):
    with pytest.raises(ValueError):
        parse_addr(addr)


def test_event_mask_is_never_zero():
    assert runtime_info.event_mask(["CreateContainer", "Configure"]) == 0x8
    with pytest.raises(ValueError):
        runtime_info.event_mask(["Configure"])


@pytest.mark.parametrize("args,timeout,accepts_cdi,source", [
    (("containerd", "1.7.24~ds1", 0, 0, 1_999_000_000), 1.999, False, "deadline"),
    (("containerd", "1.7.24", 0, 0, 0), 2.0, False, "fallback"),
    (("containerd", "2.1.3", 5000, 2000, 1_900_000_000), 2.0, True, "configure"),
    (("containerd", "v2.2.0", 5000, 2000, 0), 2.0, True, "configure"),
    (("containerd", "1.7.27", 5000, 2000, 0), 2.0, False, "configure"),
    (("containerd", "2.0.5", 5000, 2000, 0), 2.0, False, "configure"),
    (("cri-o", "1.33.0", 5000, 2000, 0), 2.0, False, "configure"),
], ids=["v0.6.1: deadline of the Configure call", "nothing reported: 2s fallback",
        "containerd 2.1: Configure's timeout, CDI accepted", "containerd v2.2.0: CDI accepted",
        "containerd 1.7.27 drops CDI devices: edits applied directly",
        "containerd 2.0 drops CDI devices: edits applied directly",
        "another runtime: not assumed to apply CDI devices"])
def test_runtime_info_from_configure(args, timeout, accepts_cdi, source):
    info = runtime_info.from_configure(*args)
    assert (info.name, info.version) == args[:2]
    assert (info.request_timeout_s, info.accepts_cdi, info.timeout_source) == (
        timeout, accepts_cdi, source)
    assert info.cdi_reason


def test_probe_server_routes():
    health = Health()
    server = ProbeServer("127.0.0.1", 0, health).start()
    try:
        def get(path):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
            conn.request("GET", path)
            resp = conn.getresponse()
            out = resp.status, resp.getheader("Content-Type"), resp.read()
            conn.close()
            return out
        assert get("/readyz")[0] == 503
        assert get("/healthz") == (200, "text/plain; charset=utf-8", b"ok\n")
        assert get("/nope")[0] == 404
    finally:
        server.stop()


def test_empty_health_addr_disables_the_probes():
    assert serve("", Health()) is None
