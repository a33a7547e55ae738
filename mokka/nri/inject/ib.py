"""InfiniBand: selected by its pod annotation and by nothing else.

A privileged container inherits every host /dev/infiniband/* node under a
wildcard rule without asking for RDMA, so device paths are not evidence; no
RDMA allocation signal has been validated yet. The selection adds the overlay
and the IB env (env.py); it never adds or removes real device nodes.
"""

from __future__ import annotations

from mokka.nri.inject import switch
from mokka.nri.inject.draft import Draft
from mokka.nri.inject.model import Config, NodeView, Pod

NO_HCA = "infiniband requested but the staged profile has no HCA; the tools will find nothing"


def selected(config: Config, pod: Pod) -> bool:
    return switch.is_true(pod.annotations, config.infiniband_annotation)


def check_hcas(view: NodeView, draft: Draft) -> None:
    # Still inject: the pod starts and its tools report an empty fabric, which
    # is what the profile describes. The warning says why.
    if view.hca_count <= 0:
        draft.warn(NO_HCA)
