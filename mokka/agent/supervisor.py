"""Keep one daemon's child running: restart it with backoff when it exits unexpectedly.

A child is anything with ``wait() -> reason`` and ``terminate(timeout)``: a
process (``ProcessChild``, e.g. ``mokka fabricmanager``) or a thread
(``ThreadChild``, e.g. kernellog's announcer). The supervisor thread spawns
it, waits for it, and unless told to stop, marks the daemon down (``ready()``
names why, so /readyz says which daemon is down), waits out the backoff and
spawns again. The backoff doubles from ``backoff_min`` to ``backoff_max`` and
starts over once a child has stayed up for ``stable_after`` seconds.

Nothing here restarts a running child: Reload reaches a daemon through its own
channel, never through the supervisor.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import Callable, Protocol

BACKOFF_MIN_S, BACKOFF_MAX_S, STABLE_AFTER_S = 0.5, 30.0, 10.0


class Child(Protocol):
    def wait(self) -> str:
        """Block until it ends; why it ended, for the log and /readyz."""
        ...

    def terminate(self, timeout: float) -> None: ...


def describe_status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _child_setup() -> None:
    """In the forked child: unblock the signals the agent blocks in every thread
    (runner.serve), and get SIGTERM when the agent dies, so a kill -9 of the agent
    leaves no daemon behind."""
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class ProcessChild:
    """A process in a session of its own: a terminal's Ctrl-C (SIGINT to the agent's
    process group) reaches only the agent, which stops the child itself, so a
    shutdown is never mistaken for a crash and restarted."""

    def __init__(self, argv: list[str], env: dict | None = None):
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, preexec_fn=_child_setup,
                                     start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self) -> str:
        return describe_status(self.proc.wait())

    def terminate(self, timeout: float) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ThreadChild:
    """``target(stop)`` in a thread; returning or raising before ``stop`` is set is an exit.
    ``wake`` (if given) is called after ``stop`` is set, to rouse a target blocked elsewhere."""

    def __init__(self, name: str, target: Callable[[threading.Event], None],
                 wake: Callable[[], None] | None = None):
        self.stop = threading.Event()
        self._wake = wake
        self._reason = "returned"
        self._thread = threading.Thread(target=self._run, args=(target,), name=name, daemon=True)
        self._thread.start()

    def _run(self, target) -> None:
        try:
            target(self.stop)
        except BaseException as exc:  # noqa: BLE001 - reported as the exit reason
            self._reason = f"crashed: {type(exc).__name__}: {exc}"

    def wait(self) -> str:
        self._thread.join()
        return self._reason

    def terminate(self, timeout: float) -> None:
        self.stop.set()
        if self._wake is not None:
            self._wake()
        self._thread.join(timeout)


class Supervisor:
    def __init__(self, name: str, spawn: Callable[[], Child], log, *,
                 backoff_min: float = BACKOFF_MIN_S, backoff_max: float = BACKOFF_MAX_S,
                 stable_after: float = STABLE_AFTER_S, clock=time.monotonic):
        self.name = name
        self._spawn = spawn
        self._log = log
        self._min, self._max, self._stable = backoff_min, backoff_max, stable_after
        self._clock = clock
        self._stopping = threading.Event()
        self._mu = threading.Lock()
        self._child: Child | None = None
        self._down: str | None = "not started yet"
        self._thread: threading.Thread | None = None
        self.restarts = 0

    @property
    def child(self) -> Child | None:
        with self._mu:
            return self._child

    def start(self) -> None:
        if self._thread is not None:
            return                                 # daemons start exactly once
        self._thread = threading.Thread(target=self._loop, name=f"supervise-{self.name}", daemon=True)
        self._thread.start()

    def ready(self) -> tuple[bool, str]:
        with self._mu:
            return self._down is None, self._down or ""

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        child = self.child
        if child is not None:
            child.terminate(timeout)
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        backoff = self._min
        while not self._stopping.is_set():
            started = self._clock()
            try:
                child = self._spawn()
            except Exception as exc:  # noqa: BLE001 - fail open: report and retry
                reason = f"cannot start: {type(exc).__name__}: {exc}"
            else:
                with self._mu:
                    self._child, self._down = child, None
                if self._stopping.is_set():        # stop() raced the spawn
                    child.terminate(10.0)
                    break
                reason = child.wait()
                with self._mu:
                    self._child = None
            if self._stopping.is_set():
                break
            if self._clock() - started >= self._stable:
                backoff = self._min
            self.restarts += 1
            with self._mu:
                self._down = f"{self.name} {reason}; restarting in {backoff:g}s (restart {self.restarts})"
            self._log.warning("daemon exited unexpectedly; restarting after a backoff", daemon=self.name,
                              reason=reason, backoff_s=backoff, restarts=self.restarts)
            if self._stopping.wait(backoff):
                break
            backoff = min(backoff * 2, self._max)
        with self._mu:
            self._down = "stopped"


def mokka_argv(command: str, *args: str) -> tuple[list[str], dict]:
    """(argv, env) that run ``mokka COMMAND ARGS`` with this interpreter and this package,
    from a source tree, an installed package or an unpacked zipapp alike."""
    return python_argv("mokka", command, *args)


def python_argv(module: str, *args: str) -> tuple[list[str], dict]:
    """(argv, env) that run ``python -m MODULE ARGS`` of this package (as mokka_argv)."""
    import sys

    import mokka
    from mokka.core import log

    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(mokka.__file__)))
    env = {**os.environ, **log.child_env()}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    return [sys.executable, "-m", module, *args], env
