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
over an existing one announces only what is new.

Stage records the kernel log in the staged tree (``driver/kernel-log``, also with
``--once``; mokka.core.kmsg), so ``mokka ctl xid`` writes its line there and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
import threading

from mokka.agent.desired import Desired
from mokka.agent.hostfs import File
from mokka.agent.simulators import Host
from mokka.agent.supervisor import Supervisor, ThreadChild
from mokka.core import flatstate, fsutil, names, xid

OWNER = "kernellog"
RECORD_OWNER = "kernellog:record"      # the kernel log's record, staged apart from the events


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
        # The same lock and numbering as ``mokka ctl xid`` (which appends to this file).
        directory = os.path.dirname(self.events_path)
        with fsutil.dir_locked(self.events_path) if os.path.isdir(directory) \
                else contextlib.nullcontext():
            previous, last = self._recorded()
            current, new, last = xid.next_events(previous, xid.injections(desired.state), last)
            if new or current != previous or not os.path.exists(self.events_path):
                text, companion = xid.render(current, last)
                # converge writes in path order: the companion (.nvml) before the YAML.
                self.host.fs.converge(OWNER, {
                    flatstate.companion_path(self.events_path): File(companion),
                    self.events_path: File(text)})
        for event in new:
            line = xid.kmsg_line(event.injection, self.node_name)
            self._kmsg(line)
            self.host.log.warning("Xid injected", gpu=event.injection.gpu, code=event.injection.code,
                                  seq=event.seq, line=line)
        return new

    def _recorded(self) -> tuple[list[xid.Event], int]:
        try:
            with open(self.events_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return [], 0
        from mokka.core import yamlio
        try:
            return xid.parse(yamlio.safe_load(data))
        except yamlio.YAMLError:
            return [], 0

    def _kmsg(self, line: str) -> None:
        try:
            fd = os.open(self.kmsg_path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
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
