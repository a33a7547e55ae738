"""MIG under seed 000's allocation rule, the names a MIG allocation carries, the
management path's MIG capabilities, and the proc hook GPU containers get.

A MIG device arrives as the device plugin gives it: its parent's /dev/nvidiaN and its
GPU and compute instance's /dev/nvidia-caps nodes, each with its cgroup rule, or as
the CDI name k8s.device-plugin.nvidia.com/gpu=MIG-<uuid> (or <gpu>:<mig>).
"""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.nri.inject import Container, Device, adjust, gpu
from mokka.nri.inject.prochook import hook
from tests.nri.inject.builders import (allocated, config, control_nodes, device_paths, env_of,
                                      full_view, gpu_node, plain, pod, rule)

DP = names.CDI_KIND_DEVICE_PLUGIN
MIG_A = "MIG-3a5c1d2e-0f9b-5c8d-a7e6-1b2c3d4e5f60"
MIG_B = "MIG-7b1e2c3d-4a5f-5b6c-8d9e-0a1b2c3d4e5f"
CRI_KEY = f"{names.CDI_CRI_ANNOTATION_PREFIX}k8s.device-plugin.nvidia.com_gpu"
CAP_MAJOR = names.NVIDIA_CAPS_MAJOR


def cap(minor: int, mode: int = 0o444) -> Device:
    return Device(f"/dev/nvidia-caps/nvidia-cap{minor}", "c", CAP_MAJOR, minor, mode, 0, 0)


def mig_specs(gpu_index: int = 0, gi: int = 12, ci: int = 13, *, parent_rule: bool = True) -> Container:
    """The device plugin's DeviceSpecs for one MIG device (pass-device-specs), with the
    control nodes and cgroup rules it comes with."""
    rules = tuple(rule(CAP_MAJOR, m) for m in (gi, ci)) + ((rule(minor=gpu_index),) if parent_rule else ())
    return Container(name="main", devices=control_nodes() + (gpu_node(gpu_index), cap(gi), cap(ci)),
                     device_rules=rules + (rule(minor=names.NVIDIACTL_MINOR),))


def cdi(*device_ids: str) -> Container:
    return plain(cdi_devices=tuple(f"{DP}={i}" for i in device_ids))


MANAGEMENT_CAPS = (cap(1, 0o400), cap(2))
VIEW = full_view(mig_caps=MANAGEMENT_CAPS, proc_hook_staged=True)

EVIDENCE = [
    ("a MIG device's specs (parent node and two caps nodes) are evidence", mig_specs(), True),
    ("the caps nodes alone, each exactly allowed, are not evidence",
     plain(devices=(cap(12), cap(13)), device_rules=(rule(CAP_MAJOR, 12), rule(CAP_MAJOR, 13))), False),
    ("the config capability alone is not evidence",
     plain(devices=(cap(1, 0o400),), device_rules=(rule(CAP_MAJOR, 1),)), False),
    ("a MIG device's specs without the parent's rule are not evidence", mig_specs(parent_rule=False), False),
    ("cdi: the device plugin's MIG UUID is evidence", cdi(MIG_A), True),
    ("cdi: the device plugin's <gpu>:<mig> index is evidence", cdi("0:1"), True),
    ("cdi: the pre-R470 MIG-GPU-<uuid>/<gi>/<ci> form is not evidence", cdi("MIG-GPU-6a8c4b1e/1/0"), False),
    ("cdi: the toolkit's MIG device is not evidence", plain(cdi_devices=(f"{names.CDI_KIND_GPU}={MIG_A}",)), False),
    ("cri annotation: a MIG UUID is evidence", plain(annotations={CRI_KEY: f"{DP}={MIG_A}"}), True),
]


@pytest.mark.parametrize("container,expected", [c[1:] for c in EVIDENCE], ids=[c[0] for c in EVIDENCE])
def test_mig_allocation_evidence(container, expected):
    assert gpu.allocated(container) is expected


NEVER_WIDENED = [
    ("MIG specs with the devices annotation: nothing added", mig_specs()),
    ("a MIG UUID by CDI with the devices annotation: nothing added", cdi(MIG_A)),
]


@pytest.mark.parametrize("container", [c[1] for c in NEVER_WIDENED], ids=[c[0] for c in NEVER_WIDENED])
def test_a_mig_allocation_is_never_widened(container):
    decision = adjust(config(), pod(names.ANNOTATION_DEVICES), container, VIEW)
    assert decision.adjustment is not None and decision.adjustment.devices == ()


def test_control_the_devices_annotation_alone_gets_every_gpu_and_the_management_caps():
    decision = adjust(config(), pod(names.ANNOTATION_DEVICES), plain(), VIEW)
    paths = device_paths(decision)
    assert [p for p in paths if p.startswith("/dev/nvidia-caps/")] == [
        "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia-caps/nvidia-cap2"]
    assert [p for p in paths if p[len("/dev/nvidia"):].isdigit()] == [f"/dev/nvidia{i}" for i in range(8)]


VISIBLE = [
    ("a MIG UUID names the MIG device", cdi(MIG_A), (), MIG_A),
    ("two MIG UUIDs, in order", cdi(MIG_B, MIG_A), (), f"{MIG_B},{MIG_A}"),
    ("a <gpu>:<mig> index names it so", cdi("1:0"), (), "1:0"),
    ("a MIG and a whole GPU: both named", cdi(MIG_A, "GPU-6a8c4b1e-90d3-4f8e-a1a2-0f5d1c2b3a4e"), (),
     f"{MIG_A},GPU-6a8c4b1e-90d3-4f8e-a1a2-0f5d1c2b3a4e"),
    ("through containerd 1.7's CRI annotation", plain(annotations={CRI_KEY: f"{DP}={MIG_A}"}), (), MIG_A),
    ("the container's own value wins", cdi(MIG_A), (f"{names.ENV_NVML_VISIBLE_DEVICES}=0",), None),
    ("control: whole GPUs by CDI name are named by their nodes, not here", cdi("0", "GPU-1"), (), None),
    ("control: MIG device specs are named by their caps nodes, not here", mig_specs(), (), None),
]


@pytest.mark.parametrize("container,authored,expected", [c[1:] for c in VISIBLE], ids=[c[0] for c in VISIBLE])
def test_a_mig_allocation_by_name_is_what_the_library_shows(container, authored, expected):
    container = container._replace(env=authored)
    env = env_of(adjust(config(), pod(), container, VIEW))
    assert env.get(names.ENV_NVML_VISIBLE_DEVICES) == expected
    if expected is not None:
        assert env.get(names.ENV_NVIDIA_VISIBLE_DEVICES) == expected


def test_the_toolkit_specs_void_stays_void():
    # The CDI edits of the toolkit's spec set NVIDIA_VISIBLE_DEVICES=void: the container's own.
    container = cdi(MIG_A)._replace(env=(f"{names.ENV_NVIDIA_VISIBLE_DEVICES}=void",))
    env = env_of(adjust(config(), pod(), container, VIEW))
    assert names.ENV_NVIDIA_VISIBLE_DEVICES not in env and env[names.ENV_NVML_VISIBLE_DEVICES] == MIG_A


PROC_HOOK = [
    ("an allocated container gets the proc hook", pod(), allocated(0), VIEW, True),
    ("a MIG allocation gets the proc hook", pod(), mig_specs(), VIEW, True),
    ("the devices annotation gets the proc hook", pod(names.ANNOTATION_DEVICES), plain(), VIEW, True),
    ("InfiniBand alone does not", pod(names.ANNOTATION_INFINIBAND), plain(), VIEW, False),
    ("IMEX channels alone do not", pod(names.ANNOTATION_IMEX_CHANNELS), plain(), VIEW, False),
    ("a hook that is not staged is not given", pod(), allocated(0), full_view(), False),
]


@pytest.mark.parametrize("pod_,container,view,expected", [c[1:] for c in PROC_HOOK], ids=[c[0] for c in PROC_HOOK])
def test_gpu_containers_get_the_proc_hook(pod_, container, view, expected):
    decision = adjust(config(), pod_, container, view)
    assert decision.adjustment is not None
    assert decision.adjustment.hooks == ((hook(names.OVERLAY_HOST_PATH),) if expected else ())


def test_the_hook_is_the_staged_helper_given_the_overlays_host_path():
    got = hook("/srv/overlay")
    assert (got.path, got.args, got.env, got.timeout) == (
        "/srv/overlay/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook",
        ("nvml-mock-proc-hook", "/srv/overlay"), (), 5)


def test_an_unselected_container_gets_nothing_even_with_the_hook_staged():
    decision = adjust(config(), pod(), plain(), VIEW)
    assert decision.adjustment is None
