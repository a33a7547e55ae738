"""GPU allocation evidence: the only way a container is "allocated".

The kubelet applies a device plugin's or DRA driver's allocation before the
runtime asks the plugin, so the allocation is visible in the incoming spec.
Three shapes count, and nothing else:

* a numbered ``/dev/nvidiaN`` character device 195:N together with a cgroup
  rule allowing exactly that device (device plugin, --pass-device-specs; a MIG
  device comes as its parent's node plus two /dev/nvidia-caps nodes, which alone
  name no GPU);
* a CDI device ``k8s.device-plugin.nvidia.com/gpu=<id>`` (cdi-cri strategy; a MIG
  device's id is its ``MIG-`` UUID, or ``<gpu>:<mig>`` with the index strategy);
* a CDI device ``k8s.gpu.nvidia.com/claim=<id>`` (NVIDIA DRA driver).

The rules are strict so that nothing is ever mistaken for an allocation: a
privileged container inherits every host node under a wildcard rule, control
nodes ride along with any allocation, and other CDI kinds (gdrcopy, mofed, the
toolkit's nvidia.com/gpu, our own nvml-mock.nvidia.com/gpu) name no GPU.
NVIDIA_VISIBLE_DEVICES and privilege are deliberately not looked at.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from mokka.core import names
from mokka.nri.inject.model import Container, Device, DeviceRule

#: Container path prefix of a numbered GPU node (``/dev/nvidia0``).
GPU_NODE_PATH_PREFIX = f"{names.CONTAINER_DEV_DIR}/{names.GPU_NODE_PREFIX}"
CHAR = "c"
#: A cgroup access string must grant read or write; "m" (mknod) alone opens nothing.
OPENING_ACCESS = frozenset("rw")
#: The CDI kinds whose devices identify an allocated GPU, with their '=' separator.
EVIDENCE_KINDS = (f"{names.CDI_KIND_DEVICE_PLUGIN}=", f"{names.CDI_KIND_DRA_CLAIM}=")
DEVICE_PLUGIN_KIND = EVIDENCE_KINDS[0]
MIG_UUID_PREFIX = "MIG-"
#: Characters an allocator never puts in a device id; one of them means a
#: malformed or forged name, not an allocation.
#: "/" or "=", or whitespace as str.isspace() has it (re's \s for str is the same set).
_FORBIDDEN_IN_ID = re.compile(r"[/=\s]")


def allocated(container: Container, requested: Iterable[str] | None = None) -> bool:
    """Whether the incoming spec carries evidence of a GPU allocation.
    ``requested``: ``cdi_names(container)``, when the caller has read them."""
    names_ = cdi_names(container) if requested is None else requested
    return any(_is_evidence_name(name) for name in names_) or _raw_allocation(container)


def named_devices(container: Container, requested: Iterable[str] | None = None) -> tuple[str, ...]:
    """The device ids the device plugin's CDI evidence names (``MIG-…``, ``GPU-…``, an
    index or ``i:j``), in order, once each: what a container was allocated by name.
    ``requested``: ``cdi_names(container)``, when the caller has read them."""
    ids: dict[str, None] = {}
    for name in (cdi_names(container) if requested is None else requested):
        if isinstance(name, str) and name.startswith(DEVICE_PLUGIN_KIND) and _is_evidence_name(name):
            ids[name[len(DEVICE_PLUGIN_KIND):]] = None
    return tuple(ids)


def is_mig_id(device_id: str) -> bool:
    """A MIG device as the device plugin names it: its UUID, or ``<gpu>:<mig>`` indices."""
    gpu, sep, index = device_id.partition(":")
    return device_id.startswith(MIG_UUID_PREFIX) or (
        bool(sep) and gpu.isascii() and gpu.isdigit() and index.isascii() and index.isdigit())


def cdi_names(container: Container) -> Iterator[str]:
    """CDI device names requested for the container, from both carriers.

    Newer NRI passes them in ``cdi_devices``; containerd 1.7 passes CRI CDI
    devices as container annotations ``cdi.k8s.io/<anything>`` whose value is
    a comma-separated list. Entries are not trimmed: the runtime does not trim
    them either, so a padded name would not resolve to an allocated device.
    """
    yield from container.cdi_devices
    for key, value in container.annotations.items():
        if isinstance(key, str) and key.startswith(names.CDI_CRI_ANNOTATION_PREFIX) \
                and isinstance(value, str):
            yield from value.split(",")


def _is_evidence_name(name: object) -> bool:
    if not isinstance(name, str):
        return False
    for kind in EVIDENCE_KINDS:
        if name.startswith(kind):
            return _valid_id(name[len(kind):])
    return False


def _valid_id(device_id: str) -> bool:
    # A UUID ("GPU-…") or an index; anything with a separator or whitespace in
    # it is not something an allocator wrote. One search, not a step per
    # character: asked twice for every name of every allocated container.
    return bool(device_id) and _FORBIDDEN_IN_ID.search(device_id) is None


def _raw_allocation(container: Container) -> bool:
    rules = container.device_rules
    return any(gpu_index(device) is not None and _exactly_allowed(device, rules)
               for device in container.devices)


def gpu_index(device: Device) -> int | None:
    """N for a well-formed /dev/nvidiaN char node 195:N, else None."""
    path = device.path
    if not isinstance(path, str) or not path.startswith(GPU_NODE_PATH_PREFIX):
        return None
    digits = path[len(GPU_NODE_PATH_PREFIX):]
    # ASCII digits only, no leading zeros: "nvidia01" or "nvidia٣" is not a GPU node.
    if not digits.isascii() or not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
        return None
    index = int(digits)
    if device.type != CHAR or device.major != names.NVIDIA_MAJOR or device.minor != index:
        return None
    return index


def _exactly_allowed(device: Device, rules: tuple[DeviceRule, ...]) -> bool:
    # Wildcards (None major or minor, type "a") are what a privileged container
    # gets for every host device; they prove nothing about an allocation.
    return any(rule.allow and rule.type == CHAR
               and rule.major is not None and rule.minor is not None
               and rule.major == device.major and rule.minor == device.minor
               and isinstance(rule.access, str) and not OPENING_ACCESS.isdisjoint(rule.access)
               for rule in rules)
