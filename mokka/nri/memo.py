"""Replies remembered per node view generation and selection (the driver's side).

On a node the same few decisions recur: one per node view and selection,
times the few PATH/LD_* values images carry. ``inject.adjust`` is pure and,
given the config, the node view and the selection, reads the container only
through its environment; every value it read comes back in
``Decision.env_read``. So a container whose environment agrees with a
remembered reply on each of those values gets that reply again, its bytes
included, without deciding or encoding; that check is a dozen lookups.

Keyed by value on (the view's generation, the selection): a new generation
(the staged tree changed) forgets everything, so nothing outlives the view it
was decided against. Thread-safe.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from mokka.nri.inject.env import EnvSet, probes_for
from mokka.nri.inject.selection import Selection

#: Replies kept per selection (distinct environments seen, most recent first).
PER_SELECTION = 8


class Reply(NamedTuple):
    """One decision as the driver sends and reports it."""
    payload: bytes                 # the serialized CreateContainerResponse (b"": none)
    adjusted: bool                 # the decision adjusts the container
    reason: str                    # Decision.reason
    warnings: tuple[str, ...]      # Decision.warnings


class ReplyMemo:
    def __init__(self, per_selection: int = PER_SELECTION) -> None:
        self._size = per_selection
        self._lock = threading.Lock()
        self._generation = -1
        # Per (generation, selection), most recent first: (env probes it agrees with, reply).
        self._seen: dict[tuple[int, Selection], list[tuple[tuple, Reply]]] = {}

    def get(self, generation: int, selection: Selection, env: EnvSet) -> Reply | None:
        """The reply remembered for a container this one cannot be told from, or None."""
        with self._lock:
            remembered = self._seen.get((generation, selection), ())
            for i, (probes, reply) in enumerate(remembered):
                if env.agrees(probes):
                    if i:
                        remembered.insert(0, remembered.pop(i))
                    return reply
        return None

    def put(self, generation: int, selection: Selection,
            env_read: tuple[tuple[str, str | None], ...], reply: Reply) -> None:
        """Remember ``reply``, decided against ``generation`` having read ``env_read``."""
        entry = (probes_for(env_read), reply)
        with self._lock:
            if generation < self._generation:
                return                      # decided against a view already replaced
            if generation > self._generation:
                self._generation, self._seen = generation, {}
            remembered = self._seen.setdefault((generation, selection), [])
            remembered.insert(0, entry)
            del remembered[self._size:]
