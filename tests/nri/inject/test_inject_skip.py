"""When a container is left exactly as authored."""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.nri.inject import adjust, skip, skip_reason
from tests.nri.inject.builders import MOUNT, allocated, config, full_view, plain, pod, pod_with

GPU = names.ANNOTATION_DEVICES
OPT_OUT = names.ANNOTATION_OPT_OUT

CASES = [
    # id, config, pod, container, expected skip reason (None = adjusted)
    ("opt-out false skips", config(), pod_with({OPT_OUT: "false", GPU: "true"}), plain(), skip.OPT_OUT),
    ("opt-out FALSE skips (case-insensitive)", config(), pod_with({OPT_OUT: "FALSE", GPU: "true"}),
     plain(), skip.OPT_OUT),
    ("opt-out ' False ' skips (trimmed)", config(), pod_with({OPT_OUT: " False\n", GPU: "true"}),
     plain(), skip.OPT_OUT),
    ("opt-out skips an allocated container too", config(), pod_with({OPT_OUT: "false"}),
     allocated(), skip.OPT_OUT),
    ("control: opt-out true does not skip", config(), pod_with({OPT_OUT: "true", GPU: "true"}),
     plain(), None),
    ("control: opt-out 'no' is not false", config(), pod_with({OPT_OUT: "no", GPU: "true"}),
     plain(), None),
    ("control: opt-out empty is not false", config(), pod_with({OPT_OUT: "", GPU: "true"}),
     plain(), None),
    ("custom opt-out key is honoured", config(opt_out_annotation="example.com/mock"),
     pod_with({"example.com/mock": "false", GPU: "true"}), plain(), skip.OPT_OUT),
    ("control: default opt-out key ignored when another is configured",
     config(opt_out_annotation="example.com/mock"), pod_with({OPT_OUT: "false", GPU: "true"}),
     plain(), None),
    ("excluded namespace skips", config(), pod(GPU, namespace="kube-system"), allocated(),
     skip.EXCLUDED_NAMESPACE),
    ("control: other namespace is adjusted", config(), pod(GPU, namespace="gpu-work"), allocated(), None),
    ("control: empty excluded list excludes nothing", config(excluded_namespaces=frozenset()),
     pod(GPU, namespace="kube-system"), plain(), None),
    ("nothing selected skips", config(), pod(), plain(), skip.NOTHING_SELECTED),
    ("unrelated annotation selects nothing", config(), pod_with({"example.com/gpu": "true"}), plain(),
     skip.NOTHING_SELECTED),
    ("devices annotation 'yes' selects nothing", config(), pod_with({GPU: "yes"}), plain(),
     skip.NOTHING_SELECTED),
    ("control: devices annotation selects", config(), pod(GPU), plain(), None),
    ("overlay already mounted skips (re-adjustment guard)", config(), pod(GPU),
     plain(mount_destinations=(MOUNT.root,)), skip.ALREADY_MOUNTED),
    ("overlay mounted with a trailing slash skips", config(), pod(GPU),
     plain(mount_destinations=(MOUNT.root + "/",)), skip.ALREADY_MOUNTED),
    ("guard holds for an allocated container", config(), pod(),
     allocated(mount_destinations=(MOUNT.root,)), skip.ALREADY_MOUNTED),
    ("control: a mount below the overlay path is not the overlay", config(), pod(GPU),
     plain(mount_destinations=(MOUNT.driver_config,)), None),
    ("control: a sibling path is not the overlay", config(), pod(GPU),
     plain(mount_destinations=(MOUNT.root + "-old",)), None),
    ("overlay mounted through a doubled or dotted path skips", config(), pod(GPU),
     plain(mount_destinations=("/proc", "/" + MOUNT.root[1:].replace("/", "//") + "/.")), skip.ALREADY_MOUNTED),
    ("control: an odd path elsewhere is not the overlay", config(), pod(GPU),
     plain(mount_destinations=("/data//x/", "/proc/.")), None),
    ("guard follows the configured mount path", config(overlay_mount_path="/mock"), pod(GPU),
     plain(mount_destinations=("/mock",)), skip.ALREADY_MOUNTED),
]


@pytest.mark.parametrize("cfg, the_pod, container, expected", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_skip_rules(cfg, the_pod, container, expected):
    decision = adjust(cfg, the_pod, container, full_view())
    if expected is None:
        assert decision.adjustment is not None, decision.reason
    else:
        assert decision.adjustment is None
        assert decision.reason == expected
    # The driver asks skip_reason before the staging gate: it must agree.
    assert skip_reason(cfg, the_pod, container) == expected


def test_skipped_decision_carries_no_warnings_from_unstaged_surfaces():
    decision = adjust(config(), pod(GPU, namespace="kube-system"), plain(), full_view(dev_nodes=()))
    assert decision.warnings == ()


@pytest.mark.parametrize("mount_path,hint", [
    ("/opt/nvml-mock", "nvml-mock"), ("/opt//nvml-mock/.", "nvml-mock"),
    ("/srv/mock/../gpu", "gpu"), ("/", ""),
])
def test_the_overlay_mount_hint_is_in_every_destination_that_names_the_overlay(mount_path, hint):
    assert skip.overlay_mount_hint(config(overlay_mount_path=mount_path)) == hint
