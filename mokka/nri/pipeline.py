"""One CreateContainer, from the runtime's messages to the reply bytes.

convert (protobuf -> inject's plain values) -> plan (skip early: namespace,
opt-out, nothing selected) -> under the staging gate: the node view and the
decision (remembered per view and selection, ``mokka.nri.memo``) -> encode
(``convert.ResponseEncoder``, reusing the bytes of equal adjustments).

This runs on every container the runtime creates, inside its request
budget: containers skipped anyway never reach the gate, and nothing here
allocates a log record that is not emitted.
"""

from __future__ import annotations

import logging
from typing import Callable, ContextManager

from mokka.core import log
from mokka.nri import convert, inject
from mokka.nri.health import SKIPPED_NOT_STAGED
from mokka.nri.inject.model import Config, NodeView
from mokka.nri.inject.skip import LABELS
from mokka.nri.memo import DecisionMemo
from mokka.nri.runtime_info import RuntimeInfo

#: ``staged(runtime)``: a context manager (the gate, staging lock held shared)
#: yielding ``(view, reason)``, the NodeView to decide against, or None and
#: why the tree is not staged.
Staged = Callable[[RuntimeInfo], ContextManager[tuple["NodeView | None", str]]]


class NoMetrics:
    """What the pipeline reports, for callers that count nothing."""

    def injected(self) -> None: ...

    def skipped(self, reason: str) -> None: ...

    def gate_checked(self, outcome: str) -> None: ...


def handler(config: Config, staged: Staged, metrics=NoMetrics()):
    """The driver's CreateContainer handler: ``handle(pod_pb, container_pb,
    runtime)`` -> the serialized CreateContainerResponse, or None for no
    adjustment.

    Exceptions propagate: the driver fails open and counts them. ``metrics``
    (mokka.nri.health.Health) counts each container injected or skipped, by
    reason; containers skipped before the gate are not counted by the gate.
    """
    logger = log.get("mokka.nri")
    encoder = convert.ResponseEncoder()
    memo = DecisionMemo(config)
    info_enabled = logging.getLogger("mokka.nri").isEnabledFor

    def handle(pod_pb, container_pb, runtime: RuntimeInfo):
        pod, ctr = convert.pod_from_pb(pod_pb), convert.container_from_pb(container_pb)
        reason, selection = inject.plan(config, pod, ctr)
        if reason is not None:
            metrics.skipped(LABELS[reason])
            return None
        with staged(runtime) as (view, reason):
            if view is None:
                metrics.skipped(SKIPPED_NOT_STAGED)
                logger.warning("container left unmodified", reason=reason,
                               namespace=pod.namespace, pod=pod.name, container=ctr.name)
                return None
            decision = memo.decide(pod, ctr, view, selection)
        for warning in decision.warnings:
            logger.warning(warning, namespace=pod.namespace, pod=pod.name, container=ctr.name)
        if decision.adjustment is None:
            metrics.skipped(LABELS[decision.reason])
            return None
        metrics.injected()
        if info_enabled(logging.INFO):
            logger.info("container adjusted", reason=decision.reason,
                        namespace=pod.namespace, pod=pod.name, container=ctr.name)
        return encoder.encode(decision.adjustment, runtime.accepts_cdi)
    return handle
