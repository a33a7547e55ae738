"""One CreateContainer, from the runtime's messages to the reply bytes.

convert (protobuf -> inject's plain values) -> plan (skip early: namespace,
opt-out, nothing selected) -> under the staging gate: the node view, then the
reply remembered for its generation and the selection (``mokka.nri.memo``),
or the decision encoded and remembered.

This runs on every container the runtime creates, inside its request
budget: containers skipped anyway never reach the gate nor have their
environment (~150 entries) read, and nothing here allocates a log record
that is not emitted.
"""

from __future__ import annotations

import logging

from mokka.core import log
from mokka.nri import convert, inject
from mokka.nri.gate import StagingGate, outcome
from mokka.nri.health import SKIPPED_NOT_STAGED
from mokka.nri.inject import skip
from mokka.nri.inject.model import Config
from mokka.nri.inject.skip import LABELS
from mokka.nri.memo import Reply, ReplyMemo
from mokka.nri.nodeview import NodeViewBuilder
from mokka.nri.runtime_info import RuntimeInfo


class NoMetrics:
    """What the pipeline reports, for callers that count nothing."""

    def injected(self) -> None: ...

    def skipped(self, reason: str) -> None: ...

    def gate_checked(self, outcome: str) -> None: ...


def handler(config: Config, views: NodeViewBuilder, gate: StagingGate, metrics=NoMetrics()):
    """The driver's CreateContainer handler: ``handle(pod_pb, container_pb,
    runtime)`` -> the serialized CreateContainerResponse (b"": no adjustment).

    While ``gate`` is enabled each decision is made holding it (the staging
    lock shared, /stagedz asked); a closed gate leaves the container as
    authored. Exceptions propagate: the driver fails open and counts them.
    ``metrics`` (mokka.nri.health.Health) counts each container injected or
    skipped, by reason; containers skipped before the gate are not counted by
    the gate.
    """
    logger = log.get("mokka.nri")
    memo = ReplyMemo()
    mount_hint = skip.overlay_mount_hint(config)
    enabled = logging.getLogger("mokka.nri").isEnabledFor

    def decide(pod, ctr, container_pb, selection, runtime: RuntimeInfo) -> Reply:
        # What the runtime takes is decided once, at Configure (RuntimeInfo).
        view = views.build(runtime_accepts_cdi=runtime.accepts_cdi)
        env = convert.env_set_from_pb(container_pb)      # read only for a selected container
        reply = memo.get(view.generation, selection, env)
        if reply is None:
            decision = inject.adjust(config, pod, ctr._replace(env=env.entries()), view, selection)
            reply = Reply(convert.response_bytes(decision.adjustment, view.runtime_accepts_cdi),
                          decision.adjustment is not None, decision.reason, decision.warnings)
            memo.put(view.generation, selection, decision.env_read, reply)
        return reply

    def handle(pod_pb, container_pb, runtime: RuntimeInfo) -> bytes:
        pod = convert.pod_from_pb(pod_pb)
        ctr = convert.container_from_pb(container_pb, env=False, mounts_containing=mount_hint)
        reason, selection = inject.plan(config, pod, ctr)
        if reason is not None:
            metrics.skipped(LABELS[reason])
            return b""
        if gate.enabled:
            with gate.hold() as verdict:
                metrics.gate_checked(outcome(verdict))
                if not verdict.ok:
                    metrics.skipped(SKIPPED_NOT_STAGED)
                    logger.warning("container left unmodified", reason=verdict.reason,
                                   namespace=pod.namespace, pod=pod.name, container=ctr.name)
                    return b""
                reply = decide(pod, ctr, container_pb, selection, runtime)
        else:
            reply = decide(pod, ctr, container_pb, selection, runtime)
        if reply.warnings and enabled(logging.WARNING):
            for warning in reply.warnings:
                logger.warning(warning, namespace=pod.namespace, pod=pod.name, container=ctr.name)
        if not reply.adjusted:
            metrics.skipped(LABELS[reply.reason])
            return b""
        metrics.injected()
        if enabled(logging.INFO):
            logger.info("container adjusted", reason=reply.reason,
                        namespace=pod.namespace, pod=pod.name, container=ctr.name)
        return reply.payload
    return handle
