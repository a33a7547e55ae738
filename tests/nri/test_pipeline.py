"""The CreateContainer pipeline: the glue between driver, gate, decision and
convert (the decision itself is replaced by a recorder; it has its own tests)."""

from __future__ import annotations

import pytest

import mokka.nri.inject as inject
from mokka.core import names
from mokka.nri import pipeline
from mokka.nri.inject import model
from mokka.nri.proto import nri_pb2
from mokka.nri.runtime_info import RuntimeInfo


class FakeGate:
    """staged(runtime) as the composition root builds it: yields (view, reason)."""

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
    gate = FakeGate(model.NodeView())
    probes["held"] = lambda: gate.held
    out = nri_pb2.CreateContainerResponse.FromString(pipeline.handler(model.Config(), gate)(
        *pbs(), RuntimeInfo(accepts_cdi=accepts_cdi))).adjust
    pod, ctr, view, held = seen[0]
    assert (pod.namespace, ctr.name, held) == ("default", "c", True)
    assert [(kv.key, kv.value) for kv in out.env] == [("A", "1")]
    assert [d.name for d in out.CDI_devices] == (["nvml-mock.nvidia.com/gpu=all"] if accepts_cdi
                                                 else [])


def test_a_skipped_container_never_reaches_the_gate(fake_adjust):
    gate = FakeGate(model.NodeView())
    assert pipeline.handler(model.Config(), gate)(*pbs("kube-system"), RuntimeInfo()) is None
    assert gate.entered == 0 and fake_adjust[0] == []


def test_containers_are_left_alone_while_not_staged_and_the_reason_logged(fake_adjust, caplog):
    handle = pipeline.handler(model.Config(), FakeGate(None, "node agent is staging"))
    with caplog.at_level("WARNING"):
        assert handle(*pbs(), RuntimeInfo()) is None
    assert fake_adjust[0] == []
    record = [r for r in caplog.records if "left unmodified" in r.getMessage()][0]
    assert record.fields == {"reason": "node agent is staging", "namespace": "default",
                             "pod": "p", "container": "c"}


def test_the_decisions_warnings_are_logged_with_the_container(fake_adjust, caplog):
    with caplog.at_level("WARNING"):
        pipeline.handler(model.Config(), FakeGate(model.NodeView()))(*pbs(), RuntimeInfo())
    (record,) = [r for r in caplog.records if r.getMessage() == "a warning"]
    assert record.fields == {"namespace": "default", "pod": "p", "container": "c"}


def test_each_container_is_counted_by_outcome(fake_adjust):
    counted = Counted()
    open_gate = pipeline.handler(model.Config(), FakeGate(model.NodeView()), counted)
    closed = pipeline.handler(model.Config(), FakeGate(None, "node agent is staging"), counted)
    open_gate(*pbs(), RuntimeInfo())
    open_gate(*pbs("kube-system"), RuntimeInfo())
    closed(*pbs(), RuntimeInfo())
    assert counted.seen == ["injected", "excluded_namespace", "not_staged"]


def test_an_equal_container_reuses_the_remembered_decision(fake_adjust):
    handle = pipeline.handler(model.Config(), FakeGate(model.NodeView()))
    first = handle(*pbs(), RuntimeInfo())
    assert handle(*pbs(), RuntimeInfo()) is first        # the very same reply bytes
    assert len(fake_adjust[0]) == 1                      # decided once
