"""Management CDI devices from the container toolkit's annotations (facts §11)."""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.nri.inject import adjust, management, skip
from tests.nri.inject.builders import (MANAGEMENT_ALL, MANAGEMENT_EDITS, allocated, config,
                                       device_paths, full_view, plain, pod_with)

NS = "gpu-operator"
ON = config(toolkit_cdi_annotations=True, cdi_annotation_namespaces=frozenset({NS}))
CONTAINER_KEY = f"{names.TOOLKIT_CDI_ANNOTATION_CONTAINER_PREFIX}main"
POD_KEY = names.TOOLKIT_CDI_ANNOTATION_POD
BARE_KEY = names.TOOLKIT_CDI_ANNOTATION
OTHER = "example.com/dev=one"
CDI_VIEW = full_view(runtime_accepts_cdi=True)

CASES = [
    # id, config, annotations, namespace, container name, expected cdi devices, warnings
    ("pod key", ON, {POD_KEY: MANAGEMENT_ALL}, NS, "main", (MANAGEMENT_ALL,), ()),
    ("bare key", ON, {BARE_KEY: MANAGEMENT_ALL}, NS, "main", (MANAGEMENT_ALL,), ()),
    ("container key", ON, {CONTAINER_KEY: MANAGEMENT_ALL}, NS, "main", (MANAGEMENT_ALL,), ()),
    ("container key beats pod key", ON, {CONTAINER_KEY: OTHER, POD_KEY: MANAGEMENT_ALL}, NS, "main",
     (OTHER,), ()),
    ("pod key beats bare key", ON, {POD_KEY: OTHER, BARE_KEY: MANAGEMENT_ALL}, NS, "main", (OTHER,), ()),
    ("present but empty container key wins (injects nothing)", ON,
     {CONTAINER_KEY: "", POD_KEY: MANAGEMENT_ALL}, NS, "main", None, ()),
    ("another container's key is not read", ON, {f"{names.TOOLKIT_CDI_ANNOTATION_CONTAINER_PREFIX}side":
                                                   MANAGEMENT_ALL}, NS, "main", None, ()),
    ("control: that key for its own container", ON, {f"{names.TOOLKIT_CDI_ANNOTATION_CONTAINER_PREFIX}side":
                                                     MANAGEMENT_ALL}, NS, "side", (MANAGEMENT_ALL,), ()),
    ("comma list, in order, duplicates once", ON, {POD_KEY: f"{MANAGEMENT_ALL},{OTHER},{MANAGEMENT_ALL}"},
     NS, "main", (MANAGEMENT_ALL, OTHER), ()),
    ("empty entries are dropped", ON, {POD_KEY: f",{MANAGEMENT_ALL},"}, NS, "main", (MANAGEMENT_ALL,), ()),
    ("not a qualified name: skipped, warned", ON, {POD_KEY: f"gpu=all,{MANAGEMENT_ALL}"}, NS, "main",
     (MANAGEMENT_ALL,), (management.INVALID.format(key=POD_KEY, name="gpu=all"),)),
    ("padded name is not trimmed: skipped", ON, {POD_KEY: f"{MANAGEMENT_ALL}, {OTHER}"}, NS, "main",
     (MANAGEMENT_ALL,), (management.INVALID.format(key=POD_KEY, name=f" {OTHER}"),)),
    ("namespace not allowed: whole list refused, warned", ON, {POD_KEY: f"{OTHER},{MANAGEMENT_ALL}"},
     "default", "main", None, (management.REFUSED.format(key=POD_KEY, namespace="default"),)),
    ("no allowed namespaces: refused", config(toolkit_cdi_annotations=True), {POD_KEY: MANAGEMENT_ALL},
     NS, "main", None, (management.REFUSED.format(key=POD_KEY, namespace=NS),)),
    ("feature gate off: ignored", config(cdi_annotation_namespaces=frozenset({NS})),
     {POD_KEY: MANAGEMENT_ALL}, NS, "main", None, ()),
]


@pytest.mark.parametrize("cfg, annotations, namespace, name, expected, warnings", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_management_annotations(cfg, annotations, namespace, name, expected, warnings):
    decision = adjust(cfg, pod_with(annotations, namespace), plain(name=name), CDI_VIEW)
    assert decision.warnings == warnings
    if expected is None:
        assert decision.adjustment is None and decision.reason == skip.NOTHING_SELECTED
        return
    assert decision.adjustment.cdi_devices == expected
    # They select themselves and nothing else: no overlay, no env, no nodes.
    assert decision.adjustment.mounts == () and decision.adjustment.env == ()
    assert decision.adjustment.devices == ()


def test_runtime_without_cdi_gets_the_edits_applied():
    decision = adjust(ON, pod_with({POD_KEY: MANAGEMENT_ALL}, NS), plain(), full_view(runtime_accepts_cdi=False))
    edits = MANAGEMENT_EDITS[0]
    assert decision.adjustment.cdi_devices == ()
    assert decision.adjustment.devices == edits.devices
    assert decision.adjustment.mounts == edits.mounts
    assert dict(decision.adjustment.env) == dict(e.split("=", 1) for e in edits.env)


def test_name_without_known_edits_is_skipped_with_a_warning():
    decision = adjust(ON, pod_with({POD_KEY: f"{OTHER},{MANAGEMENT_ALL}"}, NS), plain(),
                      full_view(runtime_accepts_cdi=False))
    assert decision.warnings == (management.NO_EDITS.format(name=OTHER),)
    assert decision.adjustment.devices == MANAGEMENT_EDITS[0].devices


def test_nothing_known_is_nothing_to_add():
    decision = adjust(ON, pod_with({POD_KEY: OTHER}, NS), plain(), full_view(runtime_accepts_cdi=False))
    assert decision.adjustment is None and decision.reason == skip.NOTHING_TO_ADD
    assert decision.warnings == (management.NO_EDITS.format(name=OTHER),)


def test_management_is_not_gpu_evidence():
    # The same names as the container's own CDI devices select nothing.
    assert adjust(ON, pod_with({}, NS), plain(cdi_devices=(MANAGEMENT_ALL,)), CDI_VIEW).adjustment is None


def test_management_beside_an_allocation_keeps_the_allocation_and_adds_the_reference():
    decision = adjust(ON, pod_with({POD_KEY: MANAGEMENT_ALL}, NS), allocated(), CDI_VIEW)
    assert decision.adjustment.cdi_devices == (MANAGEMENT_ALL,)
    assert device_paths(decision) == []
    assert decision.reason == "selected: gpu (allocation), management cdi"


def test_excluded_namespace_beats_management():
    cfg = config(toolkit_cdi_annotations=True, cdi_annotation_namespaces=frozenset({"kube-system"}))
    decision = adjust(cfg, pod_with({POD_KEY: MANAGEMENT_ALL}, "kube-system"), plain(), CDI_VIEW)
    assert decision.reason == skip.EXCLUDED_NAMESPACE
