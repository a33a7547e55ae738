"""Process lifecycles of the three modes: serve (signals, probes), --once, --teardown.

serve blocks SIGTERM/SIGINT in every thread and waits for them with sigwait
in the main thread, so the loop thread sleeps in select() and teardown starts
at once, on its own deadline, even if a pass is wedged. After teardown the
process leaves through os._exit: a wedged simulator thread must not hold it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass

from mokka.agent.loop import Agent
from mokka.agent.server import ProbeServer

SIGNALS = {signal.SIGTERM, signal.SIGINT}


def _refuse(agent: Agent, why: str) -> str:
    """Leave before anything is written: free the root lock and remove what it made."""
    if agent.root_lock is not None:
        agent.root_lock.undo()
    return why


def once(agent: Agent) -> int | str:
    desired = agent.source.poll_once(agent.clock())
    if agent.source.rejected is not None:          # refused before anything is written
        return _refuse(agent, str(agent.source.rejected))
    agent.prepare()
    result = agent.step(start_daemons=False, polled=desired)
    if result is None:
        return "no desired state to converge on"
    if not result.ok:
        return f"did not converge: {result.stage_errors or result.apply_error}"
    return 0


@dataclass(frozen=True)
class TornDown:
    """What a finished teardown removed: the paths and bind mounts its manifest named."""
    paths: int
    mounts: int

    def line(self, root: str) -> str:
        return (f"torn down {root}: {self.paths} path{'' if self.paths == 1 else 's'}, "
                f"{self.mounts} mount{'' if self.mounts == 1 else 's'}")


def teardown(agent: Agent, timeout: float) -> TornDown | str:
    named = TornDown(*agent.fs.manifest.extent())   # what earlier runs staged, not our own locks
    agent.prepare()           # records the locks it makes, so a clean root stays clean
    return named if agent.teardown(timeout) else "teardown incomplete; see the log"


def serve(agent: Agent, health_addr: str, shutdown_timeout: float) -> int | str:
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)      # before any thread starts
    server = None
    if health_addr:
        try:
            server = ProbeServer(health_addr, agent.health).start()
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return _refuse(agent, f"cannot serve probes on {health_addr!r}: {reason}; pass a free "
                                  "--health-addr HOST:PORT, or --health-addr '' to serve none")
        agent.log.info("probes serving", addr=health_addr, port=server.port)
    agent.prepare()
    stop = threading.Event()
    wake_r, wake_w = os.pipe()
    loop = threading.Thread(target=agent.run, args=(stop, wake_r), name="reconcile", daemon=True)
    loop.start()
    sig = signal.sigwait(SIGNALS)
    agent.log.info("shutting down: revoke, then discard", signal=signal.Signals(sig).name,
                   timeout_s=shutdown_timeout)
    stop.set()
    os.write(wake_w, b"x")
    ok = agent.teardown(shutdown_timeout)
    agent.lock.close()
    agent.log.info("teardown finished" if ok else "teardown incomplete", complete=ok)
    if server is not None:
        server.stop()
    logging.shutdown()
    os._exit(0 if ok else 1)
