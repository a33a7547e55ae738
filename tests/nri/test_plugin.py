"""The driver against the fake runtime: real Unix sockets, real threads,
bounded waits on conditions."""

from __future__ import annotations

import logging
import socket
import threading

import pytest

from mokka.nri.codec import mux, ttrpc
from mokka.nri.plugin import Plugin, PluginConfig, from_environment
from mokka.nri.proto import nri_pb2
from tests.nri.fakeruntime import FakeRuntime, PluginLink, remove_socket_dir, short_socket_path
from tests.nri.harness import INDEX, NAME, Clock, pod_and_container
from tests.waiting import wait_until


def test_registers_under_its_name_and_index(harness):
    reg = harness().link().wait_registered()
    assert (reg.plugin_name, reg.plugin_idx) == (NAME, INDEX)


def test_configure_subscribes_to_create_container_only_and_marks_ready(harness):
    h = harness()
    link = h.link()
    link.wait_registered()
    assert h.get("/readyz")[0] == 503
    assert link.configure().events == 0x8
    assert h.get("/readyz") == (200, "ok\n")
    runtime = h.plugin.runtime
    assert (runtime.name, runtime.version, runtime.request_timeout_s, runtime.accepts_cdi,
            runtime.timeout_source) == ("containerd", "1.7.24", 2.0, False, "deadline")


def test_synchronize_is_answered_empty_and_echoes_more(harness):
    link = harness().link()
    link.wait_registered()
    link.configure()
    assert link.synchronize() == ttrpc.ResponseReceived(1, 3)
    more = link.synchronize(more=True)
    assert nri_pb2.SynchronizeResponse.FromString(more.payload).more is True


def test_shutdown_is_answered_empty(harness):
    link = harness().link()
    link.handshake()
    assert link.call("Shutdown").code == ttrpc.OK


def test_create_container_round_trip(harness):
    h = harness()
    link = h.link()
    link.handshake()
    resp, out = link.create_container(*pod_and_container(1))
    assert resp.code == ttrpc.OK
    assert [(kv.key, kv.value) for kv in out.adjust.env] == [("SEEN", "app-1")]
    pod, ctr, runtime = h.calls[0]
    assert (pod.namespace, pod.name, ctr.name) == ("default", "web-1", "app-1")
    assert runtime.accepts_cdi is False and runtime.request_timeout_s == 2.0


def test_newer_runtime_timeouts_come_from_configure_and_enable_cdi(harness):
    h = harness(name="containerd", version="2.1.3", registration_timeout_ms=5000,
                request_timeout_ms=1500)
    h.link().handshake()
    runtime = h.plugin.runtime
    assert (runtime.name, runtime.version, runtime.request_timeout_s, runtime.accepts_cdi,
            runtime.timeout_source) == ("containerd", "2.1.3", 1.5, True, "configure")


def test_configure_can_arrive_before_the_register_reply(harness):
    h = harness(hold_register_reply=True)
    link = h.link()
    link.wait_registered()
    assert link.configure().events == 0x8        # served while RegisterPlugin is pending
    link.release_register_reply()
    assert link.synchronize().code == ttrpc.OK
    assert link.create_container(*pod_and_container())[0].code == ttrpc.OK


@pytest.mark.parametrize("service,method,message", [
    ("nri.pkg.api.v1alpha1.Plugin", "StopContainer", "method StopContainer"),
    ("nri.pkg.api.v1alpha1.Nope", "Configure", "service nri.pkg.api.v1alpha1.Nope"),
], ids=["unknown method", "unknown service"])
def test_unknown_calls_are_unimplemented(harness, service, method, message):
    link = harness().link()
    link.handshake()
    resp = link.call(method, service=service)
    assert (resp.code, resp.message) == (ttrpc.UNIMPLEMENTED, message)


def test_garbage_create_container_payload_fails_open(harness, caplog):
    caplog.set_level(logging.WARNING)
    h = harness()
    link = h.link()
    link.handshake()
    resp = link.wait_response(link.start_call("CreateContainer", b"\xff\xff\xff\xff"))
    assert resp == ttrpc.ResponseReceived(1, resp.stream_id)      # OK, empty adjustment
    assert h.calls == [] and h.plugin.failed_open_total == 1
    assert any("failed open" in r.getMessage() for r in caplog.records)


def test_handler_exception_fails_open_with_a_named_warning(harness, caplog):
    caplog.set_level(logging.WARNING)

    def boom(pod, container, runtime):
        raise RuntimeError("decision exploded")
    h = harness(handler=boom)
    link = h.link()
    link.handshake()
    for i in range(2):
        resp, out = link.create_container(*pod_and_container(i))
        assert resp.code == ttrpc.OK and resp.payload == b""
    assert h.plugin.failed_open_total == 2
    fields = [r.fields for r in caplog.records if "failed open" in r.getMessage()]
    assert fields[-1]["namespace"] == "default" and fields[-1]["pod"] == "web-1"
    assert fields[-1]["container"] == "app-1" and fields[-1]["reason"] == "decision exploded"
    assert link.synchronize().code == ttrpc.OK                     # still serving


def test_a_slow_handler_does_not_block_the_reader_and_fails_healthz(harness):
    clock = Clock()
    entered, release = threading.Event(), threading.Event()

    def slow(pod, container, runtime):
        entered.set()
        assert release.wait(10)
        return b""
    h = harness(handler=slow, clock=clock)
    link = h.link()
    link.handshake()
    sid = link.start_call("CreateContainer", nri_pb2.CreateContainerRequest(
        pod=pod_and_container()[0], container=pod_and_container()[1]).SerializeToString())
    assert entered.wait(5)
    assert link.synchronize().code == ttrpc.OK                     # reader not blocked
    clock.t += 3.9
    assert h.get("/healthz") == (200, "ok\n")
    clock.t += 0.2
    status, body = h.get("/healthz")
    assert status == 503 and "4.1s" in body and "4.0s threshold" in body
    release.set()
    assert link.wait_response(sid).code == ttrpc.OK
    assert h.get("/healthz")[0] == 200


def test_a_burst_of_valid_work_never_fails_healthz_however_long_it_queues(harness):
    # Each handler runs 1 s of clock (a quarter of the 4 s threshold); the last of
    # 40 pipelined requests waits ~10 s for a thread. Waiting is load, not a wedge.
    clock, lock, seen = Clock(), threading.Lock(), []

    def one_second(pod, container, runtime):
        with lock:
            clock.t += 1.0
        seen.append(h.health.healthz()[0])
        return b""
    h = harness(handler=one_second, clock=clock)
    link = h.link()
    link.handshake()
    req = nri_pb2.CreateContainerRequest(pod=pod_and_container()[0],
                                         container=pod_and_container()[1]).SerializeToString()
    sids = [link.start_call("CreateContainer", req) for _ in range(40)]
    assert [link.wait_response(sid).code for sid in sids] == [ttrpc.OK] * 40
    assert seen == [200] * 40 and clock.t >= 1040.0
    assert h.get("/healthz") == (200, "ok\n")


def test_connection_loss_unreadies_then_reregisters_on_a_new_socket(harness):
    h = harness()
    h.link().handshake()
    assert h.get("/readyz")[0] == 200
    h.runtime.close()                       # containerd restarts: socket gone
    wait_until(lambda: h.get("/readyz")[0] == 503, "/readyz 503 once the connection is lost")
    assert "not registered" in h.get("/readyz")[1]
    h.runtime = FakeRuntime(h.path)         # ... and comes back
    link = h.link()
    assert link.wait_registered().plugin_name == NAME
    link.configure()
    assert h.get("/readyz")[0] == 200
    assert link.create_container(*pod_and_container())[0].code == ttrpc.OK


def test_a_corrupt_stream_is_closed_and_reestablished(harness):
    h = harness()
    first = h.link()
    first.handshake()
    first.send(mux.FRAME_HEADER.pack(1, mux.MAX_FRAME_PAYLOAD + 1))
    assert first.wait_closed()
    second = h.link(2)
    second.handshake()
    assert second.create_container(*pod_and_container())[0].code == ttrpc.OK


def test_a_refused_registration_closes_and_retries(harness):
    h = harness(hold_register_reply=True)
    first = h.link()
    first.wait_registered()
    first.release_register_reply(ttrpc.UNKNOWN, "invalid plugin index")
    assert first.wait_closed()
    assert h.link(2).wait_registered().plugin_idx == INDEX


def test_concurrent_large_replies_are_never_interleaved(harness):
    def big(pod, container, runtime):
        return nri_pb2.CreateContainerResponse(adjust=nri_pb2.ContainerAdjustment(
            env=[nri_pb2.KeyValue(key=f"K{i}", value=container.name * 40) for i in range(60)])
        ).SerializeToString()
    h = harness(handler=big)
    link = h.link()
    link.handshake()
    req = [nri_pb2.CreateContainerRequest(pod=p, container=c).SerializeToString()
           for p, c in (pod_and_container(i) for i in range(40))]
    sids = [link.start_call("CreateContainer", r) for r in req]
    for i, sid in enumerate(sids):
        resp = link.wait_response(sid)
        out = nri_pb2.CreateContainerResponse.FromString(resp.payload)
        assert len(resp.payload) > 4096 and out.adjust.env[0].value == f"app-{i}" * 40


def test_pre_launched_plugin_uses_fd_and_exits_on_eof():
    config = from_environment(PluginConfig(), {"NRI_PLUGIN_SOCKET": "3",
                                               "NRI_PLUGIN_NAME": "mokka",
                                               "NRI_PLUGIN_IDX": "05"})
    assert (config.prelaunched_fd, config.name, config.index) == (3, "mokka", "05")
    assert from_environment(PluginConfig(), {"NRI_PLUGIN_NAME": "x"}) == PluginConfig()

    ours, theirs = socket.socketpair()
    fake = FakeRuntime(path := short_socket_path())
    try:
        plugin = Plugin(PluginConfig(name="mokka", index="05", prelaunched_fd=theirs.detach()),
                        lambda *a: None)
        thread = threading.Thread(target=plugin.run, daemon=True)
        thread.start()
        link = PluginLink(ours, fake)
        assert link.wait_registered().plugin_name == "mokka"
        link.configure()
        assert plugin.health.registered
        link.close()
        thread.join(5)
        assert not thread.is_alive() and not plugin.health.registered
    finally:
        fake.close()
        remove_socket_dir(path)


def test_pre_launched_plugin_closes_a_corrupt_stream_and_exits_logging_why(caplog):
    # It cannot reconnect (containerd relaunches it only when containerd restarts):
    # exiting makes the runtime drop it at once, so containers are created
    # uninjected instead of each waiting out the request timeout on a dead stream.
    caplog.set_level(logging.ERROR)
    ours, theirs = socket.socketpair()
    fake = FakeRuntime(path := short_socket_path())
    try:
        plugin = Plugin(PluginConfig(name="mokka", index="05", prelaunched_fd=theirs.detach()),
                        lambda *a: None)
        thread = threading.Thread(target=plugin.run, daemon=True)
        thread.start()
        link = PluginLink(ours, fake)
        link.wait_registered()
        link.configure()
        link.send(mux.encode_frame(mux.PLUGIN_CONN, ttrpc.encode_header(
            ttrpc.Header(2**32 - 1, 5, ttrpc.TYPE_REQUEST))))
        assert link.wait_closed()
        thread.join(5)
        assert not thread.is_alive() and not plugin.health.registered
        errors = [r for r in caplog.records if "pre-launched" in r.getMessage()]
        assert errors and "protocol error" in errors[-1].fields["reason"]
        link.close()
    finally:
        fake.close()
        remove_socket_dir(path)
