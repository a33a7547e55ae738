"""The CreateContainer pipeline: the glue between driver, gate, decision and
convert (the decision itself is replaced by a recorder; it has its own tests)."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

import mokka.nri.inject as inject
from mokka.core import names
from mokka.nri import pipeline
from mokka.nri.gate import StagingGate, Verdict
from mokka.nri.inject import model
from mokka.nri.proto import nri_pb2
from mokka.nri.runtime_info import RuntimeInfo


class FakeGate:
    """The staging gate's surface: enabled, and hold() yielding a Verdict."""

    def __init__(self, reason=""):
        self.enabled, self.reason, self.entered, self.held = True, reason, 0, False

    @contextlib.contextmanager
    def hold(self):
        self.entered += 1
        self.held = True
        try:
            yield Verdict(not self.reason, self.reason)
        finally:
            self.held = False


class Views:
    """The node view builder's one method."""

    def __init__(self, view=None):
        self.view = view or model.NodeView()

    def build(self, runtime_accepts_cdi=False):
        return dataclasses.replace(self.view, runtime_accepts_cdi=runtime_accepts_cdi)


class Counted:
    """What the pipeline reports to the plugin's /metrics."""

    def __init__(self):
        self.seen = []

    def injected(self):
        self.seen.append("injected")

    def skipped(self, reason):
        self.seen.append(reason)

    def gate_checked(self, outcome):
        self.seen.append(f"gate:{outcome}")


@pytest.fixture
def fake_adjust(monkeypatch):
    """inject.adjust replaced by a recorder of what it was asked, and whether
    the gate was held while it decided."""
    seen, probes = [], {}

    def adjust(config, pod, container, view, selection=None):
        seen.append((pod, container, view, probes["held"]()))
        return model.Decision(model.Adjustment(env=(("A", "1"),),
                                               cdi_devices=(names.CDI_MOCK_DEVICE_ALL,)),
                              "gpu", ("a warning",))
    probes["held"] = lambda: None
    monkeypatch.setattr(inject, "adjust", adjust)
    return seen, probes


def pbs(namespace="default"):
    return (nri_pb2.PodSandbox(namespace=namespace, name="p",
                               annotations={names.ANNOTATION_DEVICES: "true"}),
            nri_pb2.Container(name="c"))


@pytest.mark.parametrize("accepts_cdi", [True, False], ids=["CDI reference kept",
                                                           "CDI reference dropped"])
def test_decides_under_the_gate_and_encodes_what_the_runtime_takes(fake_adjust, accepts_cdi):
    seen, probes = fake_adjust
    gate = FakeGate()
    probes["held"] = lambda: gate.held
    out = nri_pb2.CreateContainerResponse.FromString(pipeline.handler(model.Config(), Views(), gate)(
        *pbs(), RuntimeInfo(accepts_cdi=accepts_cdi))).adjust
    pod, ctr, view, held = seen[0]
    assert (pod.namespace, ctr.name, held) == ("default", "c", True)
    assert [(kv.key, kv.value) for kv in out.env] == [("A", "1")]
    assert [d.name for d in out.CDI_devices] == (["nvml-mock.nvidia.com/gpu=all"] if accepts_cdi
                                                 else [])


def test_a_skipped_container_never_reaches_the_gate(fake_adjust):
    gate = FakeGate()
    assert pipeline.handler(model.Config(), Views(), gate)(*pbs("kube-system"), RuntimeInfo()) == b""
    assert gate.entered == 0 and fake_adjust[0] == []


def test_containers_are_left_alone_while_not_staged_and_the_reason_logged(fake_adjust, caplog):
    handle = pipeline.handler(model.Config(), Views(), FakeGate("node agent is staging"))
    with caplog.at_level("WARNING"):
        assert handle(*pbs(), RuntimeInfo()) == b""
    assert fake_adjust[0] == []
    record = [r for r in caplog.records if "left unmodified" in r.getMessage()][0]
    assert record.fields == {"reason": "node agent is staging", "namespace": "default",
                             "pod": "p", "container": "c"}


def test_the_decisions_warnings_are_logged_with_the_container(fake_adjust, caplog):
    with caplog.at_level("WARNING"):
        pipeline.handler(model.Config(), Views(), FakeGate())(*pbs(), RuntimeInfo())
    (record,) = [r for r in caplog.records if r.getMessage() == "a warning"]
    assert record.fields == {"namespace": "default", "pod": "p", "container": "c"}


def test_each_container_is_counted_by_outcome(fake_adjust):
    counted = Counted()
    open_gate = pipeline.handler(model.Config(), Views(), FakeGate(), counted)
    closed = pipeline.handler(model.Config(), Views(), FakeGate("node agent is staging"), counted)
    no_gate = pipeline.handler(model.Config(), Views(), StagingGate(), counted)
    open_gate(*pbs(), RuntimeInfo())
    open_gate(*pbs("kube-system"), RuntimeInfo())
    closed(*pbs(), RuntimeInfo())
    no_gate(*pbs(), RuntimeInfo())
    assert counted.seen == ["gate:open", "injected", "excluded_namespace",
                            "gate:not_staged", "not_staged", "injected"]


def test_an_equal_container_reuses_the_remembered_reply_until_the_view_moves(fake_adjust):
    views = Views()
    handle = pipeline.handler(model.Config(), views, FakeGate())
    first = handle(*pbs(), RuntimeInfo())
    assert handle(*pbs(), RuntimeInfo()) is first        # the very same reply bytes
    assert len(fake_adjust[0]) == 1                      # decided once
    views.view = model.NodeView(hca_count=1, generation=1)
    assert handle(*pbs(), RuntimeInfo()) == first
    assert len(fake_adjust[0]) == 2                      # a new generation: decided again
