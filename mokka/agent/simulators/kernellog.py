"""kernellog: announce each injected Xid once, on the kernel log and to the mock NVML.

A Daemon. Run starts the announcer (a supervised thread); Run and every Reload
hand it the latest desired state. For each injection new since the last one
(mokka.core.xid), it first records the event in ``xid-events.yaml`` and its
compiled companion beside config.yaml (the mock NVML's nvmlEventSetWait
delivers events newer than an event set), then writes the driver's line to the
kernel log (``--kmsg-path``, /dev/kmsg: one write per record, appended, never
created: it is the host's). A kernel log that cannot be opened is warned about
once and skipped (fail open); the NVML channel still gets the event.

The events file is also the memory of what was announced: an agent restarted
over an existing one announces only what is new. Every container can write it, so
it is input like any other: read without following a link or blocking, bounded
(mokka.core.xid.load), and one that is not Mokka's is logged and replaced whole;
the numbering goes on from the highest number this agent wrote, so a waiter's
"newer than" stays true. ``mokka ctl xid`` appends under the directory's flock;
any workload can hold that too, so the announcer waits for it at most
LOCK_WAIT_S and then writes without it (logged, naming the holder).

Stage records the kernel log in the staged tree (``driver/kernel-log``, also with
``--once``; mokka.core.kmsg), so ``mokka ctl xid`` writes its line there and nowhere else.
"""

from __future__ import annotations

import os
import threading

from mokka.agent.desired import Desired
from mokka.agent.hostfs import File
from mokka.agent.simulators import Host
from mokka.agent.supervisor import Supervisor, ThreadChild
from mokka.core import fsutil, names, xid
from mokka.engine import xidlog

OWNER = "kernellog"
RECORD_OWNER = "kernellog:record"      # the kernel log's record, staged apart from the events
#: How long the announcer waits for ``mokka ctl xid``'s lock before it goes on without it:
#: ctl holds it for one read-modify-write, a workload for as long as it likes.
LOCK_WAIT_S = 0.5


class KernelLog:
    name = OWNER

    def __init__(self, host: Host, node_name: str, kmsg_path: str, record: bytes,
                 **supervisor_options):
        self.host = host
        self.node_name = node_name
        self.kmsg_path = kmsg_path                  # under the host root
        self.record = record                        # mokka.core.kmsg.render_record's, for ctl xid
        self.events_path = os.path.join(host.overlay.driver_config, names.XID_EVENTS_FILE)
        self.supervisor = Supervisor(OWNER, self._spawn, host.log, **supervisor_options)
        self._mu = threading.Lock()
        self._latest: Desired | None = None
        self._changed = threading.Event()
        self._kmsg_warned = False
        self._last_seq = 0                          # the highest number this agent wrote
        self._notice: dict | None = None            # the last file refused or lock gone round
        self.announced = 0                          # lines written (for tests and the log)

    # --- the Daemon verbs ----------------------------------------------------
    def stage(self, desired: Desired) -> None:
        self.host.fs.converge(RECORD_OWNER, {self.host.overlay.kmsg_record: File(self.record)})

    def run(self, desired: Desired, stop: threading.Event) -> None:
        self._hand(desired)
        self.supervisor.start()

    def reload(self, desired: Desired) -> None:
        self._hand(desired)                          # never a restart

    def discard(self) -> None:
        self.supervisor.stop()
        self.host.fs.remove_owner(OWNER)
        self.host.fs.remove_owner(RECORD_OWNER)

    def ready(self) -> tuple[bool, str]:
        return self.supervisor.ready()

    def notice(self) -> dict | None:
        """What the announcer last worked around (for /healthz): the file and the reason."""
        return self._notice

    # --- the announcer ---------------------------------------------------------
    def _hand(self, desired: Desired) -> None:
        with self._mu:
            self._latest = desired
        self._changed.set()

    def _spawn(self) -> ThreadChild:
        self._changed.set()                          # a restarted announcer catches up at once
        return ThreadChild("kernellog", self._announcer, wake=self._changed.set)

    def _announcer(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._changed.wait()
            if stop.is_set():
                return
            self._changed.clear()
            with self._mu:
                desired = self._latest
            if desired is not None:
                self.announce(desired)

    def announce(self, desired: Desired) -> list[xid.Event]:
        # The same lock, numbering and pair as ``mokka ctl xid`` (mokka.engine.xidlog). The
        # file system converges only what differs: a companion or a YAML edited by anyone
        # is put back.
        new, self._last_seq = xidlog.record(
            self.events_path, xidlog.injected_by(xid.injections(desired.state), self._last_seq),
            lock=fsutil.dir_locked_or_not(self.events_path, LOCK_WAIT_S, self._lock_held),
            publish=lambda tree: self.host.fs.converge(OWNER, {p: File(d) for p, d in tree.items()}),
            refused=self._refused)
        for event in new:
            line = xid.kmsg_line(event.injection, self.node_name)
            self._kmsg(line)
            self.host.log.warning("Xid injected", gpu=event.injection.gpu, code=event.injection.code,
                                  seq=event.seq, line=line)
        return new

    def _lock_held(self, exc: fsutil.LockHeld) -> None:
        self.host.log.warning("the config directory's lock is held: writing the Xid events "
                              "without it", path=exc.directory, holder=exc.pid or "unknown")
        self._notice = {"file": exc.directory, "reason": f"{exc}; the Xid events were written without it"}

    def _refused(self, exc: xid.Refused) -> None:
        self.host.log.warning("the Xid events file is not one Mokka wrote: replacing it",
                              path=self.events_path, reason=str(exc))
        self._notice = {"file": self.events_path, "reason": f"{exc}; replaced by Mokka's own"}

    def _kmsg(self, line: str) -> None:
        try:
            # O_NONBLOCK: a FIFO with no reader there fails at once instead of hanging the announcer
            fd = os.open(self.kmsg_path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError as exc:
            if not self._kmsg_warned:
                self._kmsg_warned = True
                self.host.log.warning("cannot open the kernel log: Xids reach the mock NVML only; "
                                      "pass a writable --kmsg-path", path=self.kmsg_path, error=exc.strerror)
            return
        try:
            os.write(fd, (xid.KMSG_PRIORITY + line + "\n").encode())   # one record per write
            self.announced += 1
        finally:
            os.close(fd)
