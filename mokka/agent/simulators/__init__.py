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

    def path(self, host_path: str) -> str:
        return under(self.root, host_path)


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
