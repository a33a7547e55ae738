"""IMEX channels: selected by their pod annotation; nodes only.

No overlay and no env: the channels are plain device nodes a workload opens
itself. Neither the device plugin nor the DRA driver delivers mock channels,
so an allocation never suppresses this selection.
"""

from __future__ import annotations

from mokka.nri.inject import switch
from mokka.nri.inject.draft import Draft
from mokka.nri.inject.model import Config, NodeView, Pod

NONE_STAGED = "imex channels requested but none are staged"


def selected(config: Config, pod: Pod) -> bool:
    return switch.is_true(pod.annotations, config.imex_channel_annotation)


def attach(view: NodeView, draft: Draft) -> None:
    if view.imex_channels:
        draft.add_devices(view.imex_channels)
    else:
        draft.warn(NONE_STAGED)
