"""Plain data the NRI decision takes and returns.

Pods, containers, mounts, devices (``mokka.core.edits``) and cgroup rules are
NamedTuples, not dataclasses: the driver builds them for every CreateContainer
(dozens of them for some requests), and a frozen dataclass costs 3-5x more to
build. No protobuf, socket or containerd type
appears here: ``mokka.nri.convert`` translates the runtime's messages into
these and the adjustment back, so every rule of the decision is testable as a
table of plain values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, NamedTuple

from mokka.core import names
from mokka.core.cdi import CDIEdits
from mokka.core.edits import Device, Hook, Mount

__all__ = ["Adjustment", "CDIEdits", "Config", "Container", "Decision", "Device", "DeviceRule",
           "Mount", "NodeView", "Pod"]


class DeviceRule(NamedTuple):
    """A device cgroup rule; None major/minor is the wildcard '*'."""
    allow: bool
    type: str            # "a", "c", "b"
    major: int | None = None
    minor: int | None = None
    access: str = ""


#: The annotations of a pod or container that has none (read-only: shared).
NO_ANNOTATIONS: Mapping[str, str] = MappingProxyType({})


class Pod(NamedTuple):
    namespace: str = ""
    name: str = ""
    annotations: Mapping[str, str] = NO_ANNOTATIONS


class Container(NamedTuple):
    name: str = ""
    #: The container's CRI CDI annotations (``cdi.k8s.io/...``), the only
    #: container annotations a rule reads (the driver copies no others).
    annotations: Mapping[str, str] = NO_ANNOTATIONS
    env: tuple[str, ...] = ()                 # "KEY=value", in spec order (duplicates possible)
    #: Where the spec mounts something: all the decision reads of its mounts
    #: (sources and options are left in the runtime's message). The driver
    #: leaves out those that cannot name the overlay (skip.overlay_mount_hint).
    mount_destinations: tuple[str, ...] = ()
    devices: tuple[Device, ...] = ()
    device_rules: tuple[DeviceRule, ...] = ()
    cdi_devices: tuple[str, ...] = ()         # fully qualified names (newer NRI carries them)


@dataclass(frozen=True)
class NodeView:
    """What is staged on the host and what the runtime can take, as seen now.

    Built by ``mokka.nri.nodeview`` from the filesystem; the decision never
    touches the disk itself.
    """
    dev_nodes: tuple[Device, ...] = ()        # staged /dev/nvidia* char nodes, sorted by path
    imex_channels: tuple[Device, ...] = ()    # staged IMEX channel nodes
    cdi_spec_staged: bool = False             # the spec at --cdi-spec-host-path exists
    cdi_edits: Mapping[str, tuple[CDIEdits, ...]] = field(default_factory=dict)
    #: ^ fully qualified CDI name -> edits (spec common edits + device edits), for
    #:   runtimes that cannot take a CDI reference (NRI v0.6.1)
    staged_shims: frozenset[str] = frozenset()  # container paths of preload shims staged on the host
    topology_staged: bool = False
    hca_count: int = 0
    runtime_accepts_cdi: bool = False         # the runtime's NRI can take CDI devices in an adjustment
    #: The staged MIG config and monitor capability nodes (/dev/nvidia-caps/nvidia-cap1, 2).
    mig_caps: tuple[Device, ...] = ()
    proc_hook_staged: bool = False            # the proc hook binary is in the overlay
    #: Moves whenever any other field does (the node view builder counts):
    #: a decision made against one generation holds for every view of it.
    #: The decision never reads it; the driver keys what it remembers on it.
    generation: int = 0


@dataclass(frozen=True)
class Config:
    excluded_namespaces: frozenset[str] = frozenset(names.NRI_EXCLUDED_NAMESPACES)
    opt_out_annotation: str = names.ANNOTATION_OPT_OUT
    device_annotation: str = names.ANNOTATION_DEVICES
    infiniband_annotation: str = names.ANNOTATION_INFINIBAND
    infiniband_tier: str = names.IB_FULL      # full | sysfs: MOCK_IB of IB-selected containers
    imex_channel_annotation: str = names.ANNOTATION_IMEX_CHANNELS
    overlay_host_path: str = names.OVERLAY_HOST_PATH
    overlay_mount_path: str = names.OVERLAY_MOUNT_PATH
    ld_preload_shims: tuple[str, ...] = names.LD_PRELOAD_SHIMS
    node_name: str = ""
    topology_mount_path: str = f"{names.OVERLAY_MOUNT_PATH}/{names.TOPOLOGY_DOC}"
    device_injection_mode: str = "raw"        # raw | cdi
    cdi_device_name: str = names.CDI_MOCK_DEVICE_ALL
    toolkit_cdi_annotations: bool = False     # feature gate ToolkitCDIAnnotations
    cdi_annotation_namespaces: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Adjustment:
    """What to add to a container. Only keys that are added or changed."""
    mounts: tuple[Mount, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    devices: tuple[Device, ...] = ()
    cdi_devices: tuple[str, ...] = ()
    #: OCI createContainer hooks (run in the container's mount namespace before pivot_root).
    hooks: tuple[Hook, ...] = ()


@dataclass(frozen=True)
class Decision:
    """The result: an adjustment, or None to leave the container as authored."""
    adjustment: Adjustment | None
    reason: str                               # why (selected surfaces, or why skipped)
    warnings: tuple[str, ...] = ()
    #: The container's env as this decision read it: (key, value or None if
    #: unset), every key consulted. Given the config, node view and selection,
    #: the env is all of the container that ``adjust`` reads, so a container
    #: agreeing on these values gets an equal decision (mokka.nri.memo).
    env_read: tuple[tuple[str, str | None], ...] = ()
