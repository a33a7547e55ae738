"""Three independent selections, GPU, InfiniBand and IMEX: which containers are injected.

All eight combinations, with GPU selected both by allocation and by the
devices annotation: each selection adds only its own surfaces.
"""

from __future__ import annotations

import itertools

import pytest

from mokka.core import names
from mokka.nri.inject import adjust, skip
from tests.nri.inject.builders import (allocated, config, device_paths, full_view, plain, pod,
                                       pod_with)

GPU_VIA = ("allocation", "devices annotation")
COMBINATIONS = [(gpu, ib, imex, via) for gpu, ib, imex in itertools.product((False, True), repeat=3)
                for via in (GPU_VIA if gpu else (None,))]


def combo_id(combo) -> str:
    gpu, ib, imex, via = combo
    chosen = [f"gpu by {via}"] if gpu else []
    chosen += ["infiniband"] if ib else []
    chosen += ["imex"] if imex else []
    return " + ".join(chosen) or "nothing"


@pytest.mark.parametrize("gpu, ib, imex, via", COMBINATIONS, ids=[combo_id(c) for c in COMBINATIONS])
def test_each_selection_adds_only_its_own_surfaces(gpu, ib, imex, via):
    keys = [names.ANNOTATION_INFINIBAND] * ib + [names.ANNOTATION_IMEX_CHANNELS] * imex
    keys += [names.ANNOTATION_DEVICES] if via == "devices annotation" else []
    container = allocated() if via == "allocation" else plain()
    view = full_view()
    decision = adjust(config(), pod(*keys), container, view)

    if not (gpu or ib or imex):
        assert decision.adjustment is None and decision.reason == skip.NOTHING_SELECTED
        return
    adjustment = decision.adjustment
    env = dict(adjustment.env)
    overlay = gpu or ib
    assert bool(adjustment.mounts) is overlay
    assert (names.ENV_PATH in env) is overlay
    assert (names.ENV_NVML_CONFIG in env) is gpu
    assert env.get(names.ENV_IB) == (names.IB_FULL if ib else names.IB_OFF if gpu else None)
    assert (names.ENV_IB_ROOT in env) is ib
    assert env.get(names.ENV_NVML_VISIBLE_DEVICES) == (names.VISIBLE_NONE if ib and not gpu else None)
    paths = device_paths(decision)
    imex_paths = [d.path for d in view.imex_channels]
    gpu_paths = [d.path for d in view.dev_nodes]
    assert [p for p in paths if p in imex_paths] == (imex_paths if imex else [])
    # Every mock GPU only for the devices annotation without an allocation.
    assert [p for p in paths if p in gpu_paths] == (gpu_paths if via == "devices annotation" else [])
    assert adjustment.cdi_devices == ()


VALUE_CASES = [
    ("'true' selects", "true", True),
    ("'TRUE' selects", "TRUE", True),
    ("'True' selects", "True", True),
    ("' true' selects (trimmed)", " true", True),
    ("'true\\n' from a YAML block scalar selects", "true\n", True),
    ("'false' does not select", "false", False),
    ("'1' does not select", "1", False),
    ("'yes' does not select", "yes", False),
    ("empty does not select", "", False),
    ("'t rue' does not select", "t rue", False),
]


@pytest.mark.parametrize("key", [names.ANNOTATION_DEVICES, names.ANNOTATION_INFINIBAND,
                                 names.ANNOTATION_IMEX_CHANNELS])
@pytest.mark.parametrize("value, selects", [c[1:] for c in VALUE_CASES], ids=[c[0] for c in VALUE_CASES])
def test_annotation_values_compare_case_insensitively(key, value, selects):
    decision = adjust(config(), pod_with({key: value}), plain(), full_view())
    assert (decision.adjustment is not None) is selects


CONTAINER_SCOPE_CASES = [
    ("devices annotation on the container is not read", names.ANNOTATION_DEVICES),
    ("infiniband annotation on the container is not read", names.ANNOTATION_INFINIBAND),
    ("imex annotation on the container is not read", names.ANNOTATION_IMEX_CHANNELS),
]


@pytest.mark.parametrize("key", [c[1] for c in CONTAINER_SCOPE_CASES], ids=[c[0] for c in CONTAINER_SCOPE_CASES])
def test_mokka_annotations_are_pod_scoped(key):
    assert adjust(config(), pod(), plain(annotations={key: "true"}), full_view()).adjustment is None
    # Positive control: the same key on the pod selects.
    assert adjust(config(), pod(key), plain(), full_view()).adjustment is not None


def test_pod_annotations_apply_to_every_container():
    the_pod = pod(names.ANNOTATION_DEVICES)
    for name in ("main", "sidecar", "init"):
        assert adjust(config(), the_pod, plain(name=name), full_view()).adjustment is not None


CUSTOM_KEY_CASES = [
    ("custom devices key", "device_annotation", names.ANNOTATION_DEVICES),
    ("custom infiniband key", "infiniband_annotation", names.ANNOTATION_INFINIBAND),
    ("custom imex key", "imex_channel_annotation", names.ANNOTATION_IMEX_CHANNELS),
]


@pytest.mark.parametrize("field, default_key", [c[1:] for c in CUSTOM_KEY_CASES], ids=[c[0] for c in CUSTOM_KEY_CASES])
def test_configured_annotation_keys(field, default_key):
    cfg = config(**{field: "example.com/custom"})
    assert adjust(cfg, pod("example.com/custom"), plain(), full_view()).adjustment is not None
    assert adjust(cfg, pod(default_key), plain(), full_view()).adjustment is None


REASON_CASES = [
    # id, container allocated, pod annotation keys, Decision.reason
    ("allocation alone", True, (), "selected: gpu (allocation)"),
    ("devices annotation alone", False, (names.ANNOTATION_DEVICES,), "selected: gpu (devices annotation)"),
    ("allocated and annotated: the allocation is named once, alone",
     True, (names.ANNOTATION_DEVICES,), "selected: gpu (allocation)"),
    ("allocated, annotated, infiniband and imex",
     True, (names.ANNOTATION_DEVICES, names.ANNOTATION_INFINIBAND, names.ANNOTATION_IMEX_CHANNELS),
     "selected: gpu (allocation), infiniband, imex"),
    ("infiniband and imex without a GPU", False,
     (names.ANNOTATION_INFINIBAND, names.ANNOTATION_IMEX_CHANNELS), "selected: infiniband, imex"),
]


@pytest.mark.parametrize("is_allocated, keys, reason", [c[1:] for c in REASON_CASES],
                         ids=[c[0] for c in REASON_CASES])
def test_the_reason_names_each_selection_once(is_allocated, keys, reason):
    container = allocated() if is_allocated else plain()
    assert adjust(config(), pod(*keys), container, full_view()).reason == reason
