"""Builders shared by the decision's table tests: plain values, no disk."""

from __future__ import annotations

from dataclasses import replace

from mokka.core import names
from mokka.core.overlay import container_overlay
from mokka.nri.inject import (CDIEdits, Config, Container, Decision, Device, DeviceRule, Mount,
                              NodeView, Pod)

MOUNT = container_overlay(names.OVERLAY_MOUNT_PATH)
GPU_COUNT = 8
IMEX_CONTAINER_DIR = "/dev/nvidia-caps-imex-channels"


def gpu_node(index: int, *, major: int = names.NVIDIA_MAJOR, minor: int | None = None,
             kind: str = "c", path: str | None = None) -> Device:
    return Device(path=path or f"/dev/{names.gpu_node_name(index)}", type=kind, major=major,
                  minor=index if minor is None else minor, file_mode=0o666, uid=0, gid=0)


def control_nodes() -> tuple[Device, ...]:
    return (
        Device("/dev/nvidia-uvm", "c", names.UVM_MAJOR, names.UVM_MINOR, 0o666, 0, 0),
        Device("/dev/nvidia-uvm-tools", "c", names.UVM_MAJOR, names.UVM_TOOLS_MINOR, 0o666, 0, 0),
        Device("/dev/nvidiactl", "c", names.NVIDIA_MAJOR, names.NVIDIACTL_MINOR, 0o666, 0, 0),
    )


def rule(major: int | None = names.NVIDIA_MAJOR, minor: int | None = 0, *, access: str = "rw",
         kind: str = "c", allow: bool = True) -> DeviceRule:
    return DeviceRule(allow=allow, type=kind, major=major, minor=minor, access=access)


def allocated(index: int = 0, **container_fields) -> Container:
    """A container the device plugin gave GPU ``index`` (pass-device-specs)."""
    return Container(name="main", devices=(gpu_node(index),) + control_nodes(),
                     device_rules=(rule(minor=index, access="rwm"),
                                   rule(minor=names.NVIDIACTL_MINOR, access="rwm")),
                     **container_fields)


def imex_channel(index: int) -> Device:
    return Device(f"{IMEX_CONTAINER_DIR}/{names.IMEX_CHANNEL_PREFIX}{index}", "c",
                  names.IMEX_CHANNEL_MAJOR, index, 0o666, 0, 0)


def staged_shim_paths() -> frozenset[str]:
    return frozenset(MOUNT.shim(shim) for shim in names.LD_PRELOAD_SHIMS)


MOCK_DEVICE_EDITS = (
    CDIEdits(env=(f"{names.ENV_CDI_DEVICE_SOURCE}=cdi",)),
    CDIEdits(devices=tuple(gpu_node(i) for i in range(GPU_COUNT)) + control_nodes()),
)
MANAGEMENT_ALL = f"{names.CDI_KIND_MANAGEMENT}={names.CDI_DEVICE_ALL}"
MANAGEMENT_EDITS = (
    CDIEdits(env=(f"{names.ENV_NVML_CONFIG}=/etc/nvml-mock/config.yaml",),
             devices=control_nodes(),
             mounts=(Mount(destination=names.CDI_NVIDIA_SMI_MOUNT, source="/host/nvidia-smi",
                           options=("ro", "nosuid", "nodev", "bind")),)),
)


def full_view(**changes) -> NodeView:
    """Everything staged: 8 GPUs, control nodes, 4 IMEX channels, shims, topology, IB."""
    view = NodeView(
        dev_nodes=tuple(gpu_node(i) for i in range(GPU_COUNT)) + control_nodes(),
        imex_channels=tuple(imex_channel(i) for i in range(4)),
        cdi_spec_staged=True,
        cdi_edits={names.CDI_MOCK_DEVICE_ALL: MOCK_DEVICE_EDITS, MANAGEMENT_ALL: MANAGEMENT_EDITS},
        staged_shims=staged_shim_paths(),
        topology_staged=True,
        hca_count=2,
        runtime_accepts_cdi=False,
    )
    return replace(view, **changes)


def config(**changes) -> Config:
    return replace(Config(), **changes)


def pod(*true_keys: str, namespace: str = "default") -> Pod:
    """A pod with each of ``true_keys`` annotated "true"."""
    return pod_with({key: "true" for key in true_keys}, namespace)


def pod_with(annotations: dict[str, str], namespace: str = "default") -> Pod:
    return Pod(namespace=namespace, name="p", annotations=annotations)


def env_of(decision: Decision) -> dict[str, str]:
    assert decision.adjustment is not None, decision.reason
    return dict(decision.adjustment.env)


def device_paths(decision: Decision) -> list[str]:
    return [] if decision.adjustment is None else [d.path for d in decision.adjustment.devices]


def plain(**fields) -> Container:
    """An unallocated container."""
    fields.setdefault("name", "main")
    return Container(**fields)
