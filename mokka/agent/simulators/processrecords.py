"""processrecords: the agent sweeps the CUDA process records no live process holds (a Daemon).

Every CUDA process of the node keeps its records in its user's directory in
driver/config/processes (gpudriver makes the directory). A process killed with
SIGKILL leaves its record behind: readers no longer count it, and only a later
process of the same user removes it, so records of other users would pile up; and
what a workload puts in processes/ that is not a user's directory (junk, or a
directory made in another user's name, which keeps that user from its records)
stays until someone removes it. The agent, root on the host, sweeps both at start
and every SWEEP_S through the staged library (mokka.agent.records), which alone
knows what a user's directory and a live record are. A sweep that fails is logged
once per reason; the node keeps working.
"""

from __future__ import annotations

import os
import threading

from mokka.agent import records
from mokka.agent.desired import Desired
from mokka.agent.simulators import Host
from mokka.agent.supervisor import Supervisor, ThreadChild
from mokka.core import names

OWNER = "process-records"
#: How often the records of dead processes are swept.
SWEEP_S = 30.0


class ProcessRecords:
    name = OWNER

    def __init__(self, host: Host, sweep_s: float = SWEEP_S, **supervisor_options):
        self.host = host
        self.sweep_s = sweep_s
        self.supervisor = Supervisor(OWNER, self._spawn, host.log, **supervisor_options)
        self._wake = threading.Event()
        self._said: str | None = None
        self.swept = 0                              # records removed (for tests and the log)

    # --- Simulator and Daemon ------------------------------------------------------
    def stage(self, desired: Desired) -> None:
        """Nothing to write: the directory is gpudriver's."""

    def run(self, desired: Desired, stop: threading.Event) -> None:
        if self._library() is not None:
            self.supervisor.start()

    def reload(self, desired: Desired) -> None:
        self._wake.set()                            # a restage is a good moment to sweep

    def discard(self) -> None:
        self.supervisor.stop()

    def ready(self) -> tuple[bool, str]:
        if self._library() is None:
            return True, ""
        return self.supervisor.ready()

    # --- the sweeper ---------------------------------------------------------------
    def _library(self) -> str | None:
        """The staged mock library, when this node stages the CUDA driver (and so records)."""
        if self.host.native.nvml_library is None or self.host.native.cuda_library is None:
            return None
        return os.path.join(self.host.overlay.lib, names.NVML_LIB_FILE)

    def _spawn(self) -> ThreadChild:
        return ThreadChild("process-records", self._sweeper, wake=self._wake.set)

    def _sweeper(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.sweep_once()
            self._wake.wait(self.sweep_s)
            self._wake.clear()

    def sweep_once(self) -> int:
        library = self._library()
        if library is None or not os.path.isdir(self.host.overlay.process_records):
            return 0
        try:
            removed = records.sweep(library, self.host.overlay.process_records)
        except OSError as exc:
            if str(exc) != self._said:
                self._said = str(exc)
                self.host.log.warning("cannot sweep the CUDA process records", error=str(exc))
            return 0
        self._said = None
        if removed:
            self.swept += removed
            self.host.log.info("removed the records of CUDA processes that are gone",
                               dir=self.host.overlay.process_records, removed=removed)
        return removed
