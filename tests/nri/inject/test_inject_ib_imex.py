"""InfiniBand and IMEX: each selected only by its own annotation."""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.nri.inject import Device, adjust, ib, imex, skip
from tests.nri.inject.builders import (allocated, config, device_paths, env_of, full_view, plain,
                                       pod, rule)

IB = names.ANNOTATION_INFINIBAND
IMEX = names.ANNOTATION_IMEX_CHANNELS
UMAD = Device("/dev/infiniband/umad0", "c", 231, 0)
UVERBS = Device("/dev/infiniband/uverbs0", "c", 231, 192)

IB_CASES = [
    ("annotation with HCAs staged: no warning", pod(IB), plain(), full_view(hca_count=2), True, ()),
    ("annotation, profile without HCA: injected anyway, warned", pod(IB), plain(), full_view(hca_count=0),
     True, (ib.NO_HCA,)),
    ("inherited /dev/infiniband nodes under a wildcard rule are not a selection", pod(),
     plain(devices=(UMAD, UVERBS), device_rules=(rule(None, None, kind="a", access="rwm"),)),
     full_view(), False, ()),
    ("exactly allowed /dev/infiniband nodes are not a selection either", pod(),
     plain(devices=(UMAD,), device_rules=(rule(231, 0),)), full_view(), False, ()),
]


@pytest.mark.parametrize("the_pod, container, view, selected, warnings", [c[1:] for c in IB_CASES],
                         ids=[c[0] for c in IB_CASES])
def test_infiniband_only_by_annotation(the_pod, container, view, selected, warnings):
    decision = adjust(config(), the_pod, container, view)
    assert (decision.adjustment is not None) is selected
    assert decision.warnings == warnings
    if selected:
        assert env_of(decision)[names.ENV_IB] == names.IB_FULL
        # Never adds or removes real /dev/infiniband nodes.
        assert decision.adjustment.devices == ()


def test_infiniband_adds_no_gpus():
    decision = adjust(config(), pod(IB), plain(), full_view())
    assert decision.adjustment.devices == () and decision.adjustment.cdi_devices == ()


IMEX_CASES = [
    ("imex only: channel nodes and nothing else", pod(IMEX), plain(), full_view(), "channels", ()),
    ("imex with no channels staged: nothing to add, warned", pod(IMEX), plain(), full_view(imex_channels=()),
     None, (imex.NONE_STAGED,)),
    ("imex with an allocation: channels added, allocation kept", pod(IMEX), allocated(), full_view(),
     "channels+overlay", ()),
    ("imex + infiniband, no channels: overlay still added, warned", pod(IMEX, IB), plain(),
     full_view(imex_channels=()), "overlay", (imex.NONE_STAGED,)),
]


@pytest.mark.parametrize("the_pod, container, view, expect, warnings", [c[1:] for c in IMEX_CASES],
                         ids=[c[0] for c in IMEX_CASES])
def test_imex_channels(the_pod, container, view, expect, warnings):
    decision = adjust(config(), the_pod, container, view)
    assert decision.warnings == warnings
    if expect is None:
        assert decision.adjustment is None and decision.reason == skip.NOTHING_TO_ADD
        return
    channel_paths = [d.path for d in view.imex_channels]
    assert device_paths(decision) == (channel_paths if "channels" in expect else [])
    assert bool(decision.adjustment.mounts) is ("overlay" in expect)
    assert bool(decision.adjustment.env) is ("overlay" in expect)


def test_imex_only_has_no_overlay_and_no_env():
    decision = adjust(config(), pod(IMEX), plain(env=("PATH=/bin",)), full_view())
    assert decision.adjustment.mounts == () and decision.adjustment.env == ()
    assert decision.adjustment.cdi_devices == ()
    assert decision.reason == "selected: imex"


@pytest.mark.parametrize("tier, gpus, want", [
    # (--infiniband-tier, devices annotation too, MOCK_IB the container gets)
    ("full", False, "full"),
    ("sysfs", False, "sysfs"),
    ("sysfs", True, "sysfs"),
    ("full", True, "full"),
])
def test_the_infiniband_tier_is_what_an_ib_container_gets(tier, gpus, want):
    annotations = (IB, names.ANNOTATION_DEVICES) if gpus else (IB,)
    decision = adjust(config(infiniband_tier=tier), pod(*annotations), plain(), full_view())
    assert env_of(decision)["MOCK_IB"] == want


def test_a_gpu_only_container_gets_the_shims_switched_off_whatever_the_tier():
    decision = adjust(config(infiniband_tier="sysfs"), pod(names.ANNOTATION_DEVICES), plain(), full_view())
    assert env_of(decision)["MOCK_IB"] == "off"
