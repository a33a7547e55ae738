"""mock-ib as a daemon of the node agent: Run once, Reload after, stopped by the stop event.

Stage only derives the fabric (pure) and makes sure ``run/`` exists, so a bad
infiniband block fails the Stage wave like any other simulator. Run starts the
server on ``run/mock-ib.sock`` (and the fabric relay when configured); Reload
swaps the fabric in place, so umad ports open in containers stay connected.
Discard stops the server and removes the socket and ``run/`` (manifest-owned).
"""

from __future__ import annotations

import os
import threading

from mokka.agent.desired import Desired
from mokka.agent.simulators import Host, Readiness
from mokka.ib import fabric as fab

OWNER = "mock-ib"


def fabric_of(desired: Desired) -> fab.Fabric:
    return fab.from_state(desired.state, desired.state.get("node_name") or "")


class MockIbDaemon:
    name = OWNER

    def __init__(self, host: Host, relay_listen: str = "", relay_peers: tuple[str, ...] = ()):
        self.host = host
        self.relay_listen = relay_listen
        self.relay_peers = tuple(relay_peers)
        self._readiness = Readiness("mock-ib not started")
        self._daemon = None
        self._lock = threading.Lock()

    # --- Simulator -----------------------------------------------------------------
    def stage(self, desired: Desired) -> None:
        fabric_of(desired)                       # rejects a bad block before any daemon runs
        sock = self.host.overlay.ib_ping_socket
        # The socket is the server's to write; the manifest owns it and run/, so
        # teardown leaves the root as it found it even after a kill -9.
        self.host.fs.converge(OWNER, {}, extra=[sock],
                              writer=lambda: os.makedirs(os.path.dirname(sock), exist_ok=True))

    def discard(self) -> None:
        with self._lock:
            daemon, self._daemon = self._daemon, None
        if daemon is not None:
            daemon.stop()
        self.host.fs.remove_owner(OWNER)
        self._readiness.fail("mock-ib stopped")

    def ready(self) -> tuple[bool, str]:
        with self._lock:
            daemon = self._daemon
        if daemon is not None and not daemon.running:
            return False, f"mock-ib stopped: {daemon.error}"
        return self._readiness.ready()

    # --- Daemon --------------------------------------------------------------------
    def run(self, desired: Desired, stop: threading.Event) -> None:
        """Start serving; a failure (socket path, relay address) fails /readyz, not the pass."""
        from mokka.ib.daemon import MockIb

        try:
            relay = None
            if self.relay_listen:
                from mokka.ib import relay as rl
                relay = rl.Relay(rl.parse_addr(self.relay_listen),
                                 [rl.parse_addr(p) for p in self.relay_peers], self.host.log)
            daemon = MockIb(self.host.overlay.ib_ping_socket, fabric_of(desired), self.host.log,
                            relay=relay)
            daemon.start()
        except (OSError, ValueError) as exc:
            reason = f"mock-ib cannot serve: {exc}"
            self.host.log.error(reason, socket=self.host.overlay.ib_ping_socket)
            self._readiness.fail(reason)
            return
        with self._lock:
            self._daemon = daemon
        self._readiness.ok()

        def watch() -> None:                     # the files are Discard's, not this thread's
            stop.wait()
            daemon.stop()

        threading.Thread(target=watch, name="mock-ib-stop", daemon=True).start()

    def reload(self, desired: Desired) -> None:
        with self._lock:
            daemon = self._daemon
        if daemon is not None:
            daemon.reload(fabric_of(desired))
