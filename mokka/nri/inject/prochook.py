"""The driver's proc files for GPU containers, through an OCI createContainer hook.

A process that reads /proc itself (a Go binary: the device plugin reads
/proc/driver/nvidia-caps/mig-minors, mig-parted /proc/modules) is out of the
LD_PRELOAD shims' reach, and runc refuses OCI mounts under /proc. So, as NVIDIA's
own container hook does, the mounts are made from inside the container's mount
namespace: a GPU-selected container gets the staged helper (names.PROC_HOOK_PATH)
as a createContainer hook, which runc runs there before pivot_root. Only while the
helper is staged; nothing else of the container changes.
"""

from __future__ import annotations

import functools

from mokka.core import cdi
from mokka.core.overlay import Overlay
from mokka.nri.inject.draft import Draft
from mokka.nri.inject.model import Config, Hook, NodeView


@functools.lru_cache(maxsize=16)
def hook(overlay_host_path: str) -> Hook:
    """The hook: a host path (the runtime runs it), given the overlay's host path."""
    # The same hook the CDI specs carry (one value), so a container given both runs it once.
    return cdi.proc_hook(Overlay(overlay_host_path))


def attach(config: Config, view: NodeView, draft: Draft) -> None:
    if view.proc_hook_staged:
        draft.add_hook(hook(config.overlay_host_path))
