"""Recognising a GPU allocation: only the three kinds of evidence count.

Each negative row sits beside the positive control it differs from.
"""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.nri.inject import Container, Device, adjust, gpu, skip
from tests.nri.inject.builders import (allocated, config, control_nodes, full_view, gpu_node, plain,
                                       pod, pod_with, rule)

DP = names.CDI_KIND_DEVICE_PLUGIN
DRA = names.CDI_KIND_DRA_CLAIM
UUID = "GPU-6a8c4b1e-90d3-4f8e-a1a2-0f5d1c2b3a4e"
CRI_KEY = f"{names.CDI_CRI_ANNOTATION_PREFIX}k8s.device-plugin.nvidia.com_gpu"


def raw(device: Device, *rules) -> Container:
    return plain(devices=(device,), device_rules=tuple(rules))


def cdi(*cdi_names: str) -> Container:
    return plain(cdi_devices=cdi_names)


def cri_annotation(value: str, key: str = CRI_KEY) -> Container:
    return plain(annotations={key: value})


CASES = [
    # --- raw device + exact cgroup rule (pass-device-specs) ---
    ("raw: nvidia0 with exact rw rule", raw(gpu_node(0), rule(minor=0)), True),
    ("raw: nvidia3 with exact r rule", raw(gpu_node(3), rule(minor=3, access="r")), True),
    ("raw: nvidia3 with exact w rule", raw(gpu_node(3), rule(minor=3, access="w")), True),
    ("raw: typical allocation with control nodes", allocated(5), True),
    ("raw: access 'm' only is not evidence", raw(gpu_node(0), rule(minor=0, access="m")), False),
    ("raw: empty access is not evidence", raw(gpu_node(0), rule(minor=0, access="")), False),
    ("raw: deny rule is not evidence", raw(gpu_node(0), rule(minor=0, allow=False)), False),
    ("raw: wildcard minor (privileged) is not evidence", raw(gpu_node(0), rule(minor=None)), False),
    ("raw: wildcard major is not evidence", raw(gpu_node(0), rule(major=None)), False),
    ("raw: type 'a' rule (privileged) is not evidence",
     raw(gpu_node(0), rule(major=None, minor=None, kind="a", access="rwm")), False),
    ("raw: rule minor mismatch is not evidence", raw(gpu_node(0), rule(minor=1)), False),
    ("raw: rule major mismatch is not evidence", raw(gpu_node(0), rule(major=196, minor=0)), False),
    ("raw: block rule for a char device is not evidence", raw(gpu_node(0), rule(minor=0, kind="b")), False),
    ("raw: block device 195:0 is not evidence",
     raw(gpu_node(0, kind="b"), rule(minor=0, kind="b")), False),
    ("raw: node without any rule is not evidence", raw(gpu_node(0)), False),
    ("raw: rule without the node is not evidence", plain(device_rules=(rule(minor=0),)), False),
    ("raw: nvidia0 with wrong major is not evidence",
     raw(gpu_node(0, major=196), rule(major=196, minor=0)), False),
    ("raw: nvidia1 numbered 195:0 is not evidence", raw(gpu_node(1, minor=0), rule(minor=0)), False),
    ("raw: leading zero path is not a GPU node",
     raw(gpu_node(1, path="/dev/nvidia01"), rule(minor=1)), False),
    ("raw: non-ascii digit is not a GPU node",
     raw(gpu_node(3, path="/dev/nvidia\u0663"), rule(minor=3)), False),
    ("raw: nvidiactl with exact rule is a control node, not a GPU",
     raw(control_nodes()[2], rule(minor=names.NVIDIACTL_MINOR)), False),
    ("raw: control nodes only, each exactly allowed",
     plain(devices=control_nodes(),
           device_rules=tuple(rule(d.major, d.minor, access="rwm") for d in control_nodes())), False),
    ("raw: nvidia-modeset is a control node",
     raw(Device("/dev/nvidia-modeset", "c", 195, 254), rule(minor=254)), False),
    ("raw: GPU node under another directory is not evidence",
     raw(gpu_node(0, path="/dev/dri/nvidia0"), rule(minor=0)), False),
    # --- CDI devices (newer NRI carries them) ---
    ("cdi: device plugin index", cdi(f"{DP}=0"), True),
    ("cdi: device plugin UUID", cdi(f"{DP}={UUID}"), True),
    ("cdi: DRA claim", cdi(f"{DRA}=claim-uid-1-gpu-0"), True),
    ("cdi: evidence among other kinds", cdi("k8s.device-plugin.nvidia.com/gdrcopy=all", f"{DP}=1"), True),
    ("cdi: gdrcopy=all is not evidence", cdi("k8s.device-plugin.nvidia.com/gdrcopy=all"), False),
    ("cdi: mofed=all is not evidence", cdi("k8s.device-plugin.nvidia.com/mofed=all"), False),
    ("cdi: toolkit nvidia.com/gpu is not evidence", cdi(f"{names.CDI_KIND_GPU}=0"), False),
    ("cdi: our own nvml-mock gpu=all is not evidence", cdi(names.CDI_MOCK_DEVICE_ALL), False),
    ("cdi: management gpu=all is not evidence", cdi(f"{names.CDI_KIND_MANAGEMENT}=all"), False),
    ("cdi: empty id is not evidence", cdi(f"{DP}="), False),
    ("cdi: id with '/' is not evidence", cdi(f"{DP}=0/1"), False),
    ("cdi: id with '=' is not evidence", cdi(f"{DP}=0=1"), False),
    ("cdi: id with a space is not evidence", cdi(f"{DP}=GPU 0"), False),
    ("cdi: id with a trailing newline is not evidence", cdi(f"{DP}=0\n"), False),
    ("cdi: id with a tab is not evidence", cdi(f"{DRA}=a\tb"), False),
    ("cdi: id with a no-break space is not evidence", cdi(f"{DP}=GPU\u00a00"), False),
    ("cdi: id with an em space is not evidence", cdi(f"{DP}=GPU\u20030"), False),
    ("cdi: id with a file separator is not evidence", cdi(f"{DP}=GPU\x1c0"), False),
    ("cdi: kind without '=' is not evidence", cdi(DP), False),
    ("cdi: kind with a different case is not evidence", cdi(DP.upper() + "=0"), False),
    ("cdi: leading space is not evidence", cdi(f" {DP}=0"), False),
    # --- CDI devices as containerd 1.7 annotations ---
    ("annotation: device plugin id", cri_annotation(f"{DP}=0"), True),
    ("annotation: any key suffix", cri_annotation(f"{DRA}=c1", key="cdi.k8s.io/anything"), True),
    ("annotation: comma list with evidence second",
     cri_annotation(f"k8s.device-plugin.nvidia.com/gdrcopy=all,{DP}={UUID}"), True),
    ("annotation: comma list without evidence",
     cri_annotation("k8s.device-plugin.nvidia.com/gdrcopy=all,k8s.device-plugin.nvidia.com/mofed=all"), False),
    ("annotation: padded entry is not evidence", cri_annotation(f"k8s.x.com/y=a, {DP}=0"), False),
    ("annotation: empty id in list is not evidence", cri_annotation(f"{DP}=,{DRA}="), False),
    ("annotation: other prefix is not a CDI carrier", cri_annotation(f"{DP}=0", key="example.com/cdi"), False),
    ("annotation: prefix without the slash is not a carrier",
     cri_annotation(f"{DP}=0", key="cdi.k8s.io.gpu"), False),
    # --- signals that are deliberately ignored ---
    ("env NVIDIA_VISIBLE_DEVICES=all is not evidence",
     plain(env=(f"{names.ENV_NVIDIA_VISIBLE_DEVICES}=all",)), False),
    ("env NVIDIA_VISIBLE_DEVICES=0 is not evidence",
     plain(env=(f"{names.ENV_NVIDIA_VISIBLE_DEVICES}=0",)), False),
    ("privileged: every node under a wildcard rule is not evidence",
     plain(devices=tuple(gpu_node(i) for i in range(8)) + control_nodes(),
           device_rules=(rule(major=None, minor=None, kind="a", access="rwm"),)), False),
]


@pytest.mark.parametrize("container, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_allocation_evidence(container, expected):
    assert gpu.allocated(container) is expected
    decision = adjust(config(), pod(), container, full_view())
    if expected:
        assert decision.adjustment is not None
        assert decision.reason.startswith("selected: gpu (allocation)")
    else:
        assert decision.adjustment is None
        assert decision.reason == skip.NOTHING_SELECTED


def test_pod_annotation_cdi_carrier_is_not_container_evidence():
    # CRI puts CDI annotations on the container; a pod annotation with the
    # same key is authored by the user and proves nothing.
    the_pod = pod_with({f"{names.CDI_CRI_ANNOTATION_PREFIX}x": f"{DP}=0"})
    assert adjust(config(), the_pod, plain(), full_view()).reason == skip.NOTHING_SELECTED
