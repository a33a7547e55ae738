"""The three independent selections (GPU, InfiniBand, IMEX) plus management
CDI devices, read once from the pod and container.

None brings another along: each adds only its own surfaces, and a container
matching several gets each. Pod annotations apply to every container.
"""

from __future__ import annotations

from typing import NamedTuple

from mokka.nri.inject import devices, gpu, ib, imex, management
from mokka.nri.inject.model import Config, Container, Pod


class Selection(NamedTuple):
    """Immutable and hashable (the driver keys remembered replies on it); a
    NamedTuple, as it is built for every container the runtime creates."""
    gpu_allocated: bool = False          # allocation evidence in the spec
    gpu_requested: bool = False          # devices annotation
    infiniband: bool = False
    imex: bool = False
    management: tuple[str, ...] = ()     # toolkit CDI names to deliver
    allocated_ids: tuple[str, ...] = ()  # the devices the device plugin's CDI names allocated
    warnings: tuple[str, ...] = ()

    @property
    def gpu(self) -> bool:
        return self.gpu_allocated or self.gpu_requested

    @property
    def all_gpus(self) -> bool:
        """Every mock GPU: only without an allocation, which is never widened."""
        return self.gpu_requested and not self.gpu_allocated

    @property
    def overlay(self) -> bool:
        return self.gpu or self.infiniband

    @property
    def any(self) -> bool:
        return self.overlay or self.imex or bool(self.management)

    def describe(self) -> str:
        parts = []
        if self.gpu_allocated:
            parts.append("gpu (allocation)")
        elif self.gpu_requested:
            parts.append("gpu (devices annotation)")
        if self.infiniband:
            parts.append("infiniband")
        if self.imex:
            parts.append("imex")
        if self.management:
            parts.append("management cdi")
        return "selected: " + ", ".join(parts)


def select(config: Config, pod: Pod, container: Container) -> Selection:
    cdi_names, warnings = management.requested(config, pod, container)
    # Read once for both GPU rules (most containers name none).
    requested = tuple(gpu.cdi_names(container)) \
        if container.cdi_devices or container.annotations else ()
    # Most containers name no CDI device and carry no device node: no
    # allocation, without asking the rules.
    allocation = bool(requested or container.devices)
    # Positional, through tuple.__new__, in Selection's field order.
    return _new_selection(Selection, (
        allocation and gpu.allocated(container, requested),
        devices.requested(config, pod),
        ib.selected(config, pod),
        imex.selected(config, pod),
        cdi_names,
        gpu.named_devices(container, requested) if requested else (),
        warnings))


_new_selection = tuple.__new__
