"""CDI names and edits: delivering a CDI device with or without runtime support.

A runtime whose NRI can take CDI devices in an adjustment resolves the name
itself. One that cannot (NRI v0.6.1, containerd 1.7) gets the device's edits
— read from the staged spec by the node view — applied directly, which is
what the runtime would have done: CDI env is set over the container's own
(CDI edits win, as when the runtime injects them), devices, mounts and
createContainer hooks added.
"""

from __future__ import annotations

import re

from mokka.nri.inject.draft import Draft
from mokka.nri.inject.model import NodeView

# Vendor and class: a letter first, an alphanumeric last, [-_.] between
# (CDI's name validation); device name: alphanumeric ends, [-_.:] between.
_QUALIFIED_NAME = re.compile(
    r"[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?"
    r"/[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?"
    r"=[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?")


def is_qualified_name(name: object) -> bool:
    """``vendor/class=device``; the runtime fails creation on anything else."""
    return isinstance(name, str) and _QUALIFIED_NAME.fullmatch(name) is not None


def deliver(draft: Draft, view: NodeView, name: str) -> bool:
    """Add CDI device ``name`` by reference or by its edits; False if neither can."""
    if view.runtime_accepts_cdi:
        draft.add_cdi_devices((name,))
        return True
    edits = view.cdi_edits.get(name)
    if not edits:
        return False
    for edit in edits:
        for entry in edit.env:
            key, sep, value = entry.partition("=")
            if sep and key:
                draft.env.force(key, value)
        draft.add_devices(edit.devices)
        draft.add_mounts(edit.mounts)
        for hook in edit.hooks:
            draft.add_hook(hook)
    return True
