"""fabricmanager: the agent runs ``mokka fabricmanager`` as a supervised child.

A Daemon: Run creates the state dir inside the driver root (with the Go
layout's ``fabric-state`` link at the overlay root) and starts the child once;
its marker then moves ``state: auto`` GPUs from IN_PROGRESS to COMPLETED for
every reader that finds the dir beside its config (names.DRIVER_FABRIC_STATE_NAME).
The profile says nothing the stand-in needs, so Reload changes nothing and never
restarts it. A child that exits is restarted with backoff (supervisor.py);
/readyz names it while it is down. Stage writes nothing: ``--once`` starts no
daemon, so a node staged once has no state dir and reads auto as COMPLETED.
Discard stops the child (it removes its marker) and removes the dir.

Disabled (``--no-fabricmanager``), Run still makes the state dir but starts no
child: the marker never appears, so auto GPUs read IN_PROGRESS for good, which
is what a node without Fabric Manager shows; the node is ready all the same.
"""

from __future__ import annotations

import os
import threading

from mokka.agent.desired import Desired
from mokka.agent.hostfs import Link
from mokka.agent.simulators import Host
from mokka.agent.supervisor import ProcessChild, Supervisor, mokka_argv

OWNER = "fabricmanager"


class FabricManager:
    name = OWNER

    def __init__(self, host: Host, delay: float = 0.0, fail: bool = False, enabled: bool = True,
                 **supervisor_options):
        self.host = host
        self.delay, self.fail, self.enabled = delay, fail, enabled
        self._announced = False
        self.supervisor = Supervisor(OWNER, self._spawn, host.log, **supervisor_options)

    def argv(self) -> tuple[list[str], dict]:
        args = ["--state-dir", self.host.overlay.fabric_state, "--delay", f"{self.delay:g}"]
        if self.fail:
            args.append("--fail")
        return mokka_argv("fabricmanager", *args)

    def _spawn(self) -> ProcessChild:
        argv, env = self.argv()
        return ProcessChild(argv, env)

    def stage(self, desired: Desired) -> None:
        pass

    def run(self, desired: Desired, stop: threading.Event) -> None:
        ov = self.host.overlay
        link = os.path.relpath(ov.fabric_state, os.path.dirname(ov.fabric_state_link))
        self.host.fs.converge(OWNER, {ov.fabric_state_link: Link(link)}, extra=[ov.fabric_ready],
                              writer=lambda: os.makedirs(ov.fabric_state, exist_ok=True))
        if self.enabled:
            self.supervisor.start()
        elif not self._announced:
            self._announced = True
            self.host.log.info("fabricmanager disabled: GPUs with fabric state auto stay in progress")

    def reload(self, desired: Desired) -> None:
        pass                       # nothing in a profile concerns the stand-in: never a restart

    def discard(self) -> None:
        self.supervisor.stop()
        self.host.fs.remove_owner(OWNER)

    def ready(self) -> tuple[bool, str]:
        if not self.enabled:
            return True, ""
        return self.supervisor.ready()
