"""Decisions remembered per node view and selection (the driver's side).

On a node the same few decisions recur: one per node view and selection,
times the few PATH/LD_* values images carry. ``inject.adjust`` is pure and,
given the config, the node view and the selection, reads the container only
through its environment; every value it read comes back in
``Decision.env_read``. So a container whose environment agrees with a
remembered decision on each of those values gets that decision again,
without deciding; that check is a dozen lookups, and the ResponseEncoder
then finds the reply bytes by identity.

A new node view (the staged tree changed) forgets everything, so nothing
outlives the view it was decided against. Thread-safe.
"""

from __future__ import annotations

import threading

from mokka.nri import inject
from mokka.nri.inject.env import EnvSet, probes_for
from mokka.nri.inject.model import Config, Container, Decision, NodeView, Pod
from mokka.nri.inject.selection import Selection

#: Decisions kept per selection (distinct environments seen, most recent first).
PER_SELECTION = 8


class DecisionMemo:
    def __init__(self, config: Config, per_selection: int = PER_SELECTION) -> None:
        self._config = config
        self._size = per_selection
        self._lock = threading.Lock()
        self._view: NodeView | None = None
        # Per selection, most recent first: (the env probes it agrees with, decision).
        self._seen: dict[Selection, list[tuple[tuple, Decision]]] = {}

    def decide(self, pod: Pod, container: Container, view: NodeView,
               selection: Selection) -> Decision:
        """``inject.adjust(config, pod, container, view, selection)``, or an equal
        decision made earlier for a container it cannot tell from this one."""
        env = EnvSet(container.env)
        with self._lock:
            if view is not self._view:
                self._view, self._seen = view, {}
            remembered = self._seen.get(selection, ())
            for i, (probes, decision) in enumerate(remembered):
                if env.agrees(probes):
                    if i:
                        remembered.insert(0, remembered.pop(i))
                    return decision
        decision = inject.adjust(self._config, pod, container, view, selection)
        entry = (probes_for(decision.env_read), decision)
        with self._lock:
            if view is self._view:
                remembered = self._seen.setdefault(selection, [])
                remembered.insert(0, entry)
                del remembered[self._size:]
        return decision
