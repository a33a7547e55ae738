"""The simulators, and the host context they share (roots, the converger, a logger)."""

from __future__ import annotations

from dataclasses import dataclass

from mokka.agent.hostfs import HostFS
from mokka.agent.native import NativeFiles
from mokka.core.overlay import Overlay, under


@dataclass(frozen=True)
class Host:
    root: str                 # --host-root: prefixes every host path
    overlay: Overlay          # the staging root under it
    fs: HostFS
    cdi_dir: str              # --cdi-spec-dir, already under root
    log: object
    native: NativeFiles = NativeFiles()   # the mock NVML library, NVIDIA's nvidia-smi
    #: The staging root as the container runtime names it (--runtime-host-root); None: overlay.
    runtime_overlay: Overlay | None = None

    def path(self, host_path: str) -> str:
        return under(self.root, host_path)

    @property
    def runtime_view(self) -> Overlay:
        """The overlay whose paths the runtime resolves: what specs and hooks name."""
        return self.runtime_overlay or self.overlay


class Readiness:
    """Ready once the simulator's own work last succeeded; the reason otherwise."""

    def __init__(self, what: str = "not staged yet"):
        self._reason: str | None = what

    def ok(self) -> None:
        self._reason = None

    def fail(self, reason: str) -> None:
        self._reason = reason

    def ready(self) -> tuple[bool, str]:
        return self._reason is None, self._reason or ""
