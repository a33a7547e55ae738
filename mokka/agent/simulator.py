"""The three interfaces a simulator may implement; the reconciler checks them by shape.

Each verb has an inverse: Stage/Discard, Apply/Revoke, Run/(the stop event).
Stage writes what nothing outside the node looks at yet and must be idempotent;
Apply publishes it. Teardown calls only the inverses, which work from the
manifest alone, so a fresh ``--teardown`` process can undo an earlier run.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from mokka.agent.desired import Desired


@runtime_checkable
class Simulator(Protocol):
    name: str

    def stage(self, desired: Desired) -> None: ...

    def discard(self) -> None: ...

    def ready(self) -> tuple[bool, str]:
        """(ready, reason when not)."""
        ...


@runtime_checkable
class Applier(Protocol):
    def apply(self, desired: Desired) -> None: ...

    def revoke(self) -> None: ...


@runtime_checkable
class Daemon(Protocol):
    def run(self, desired: Desired, stop: threading.Event) -> None:
        """Start supervising in the background and return; stop when ``stop`` is set."""
        ...

    def reload(self, desired: Desired) -> None: ...
