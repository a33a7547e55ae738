"""The staging gate: adjust only while the node agent reports its tree staged.

A container is never failed for it: a closed gate leaves it unmodified (fail
open). Before each adjustment the plugin takes the SHARED
side of the staging lock (the agent holds it exclusively while it stages or
tears down the driver tree) and asks the agent's /stagedz whether the tree is
staged. Only a 2xx passes. The lock is held while the decision is made, so a
teardown cannot start underneath it (it covers the decision, not the runtime
applying it).

Everything is bounded well inside the runtime's 2 s request budget, even when
the agent hangs: the lock is retried non-blocking for at most ``lock_wait_s``
(~200 ms) and the HTTP exchange is given ``http_timeout_s`` (500 ms) in TOTAL
(one deadline for the whole exchange, see mokka.nri.staged_client), so an
agent that trickles bytes cannot stretch it either.

The gate is open (passes everything) unless BOTH the URL and the lock path
are configured; the command line requires them together.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from typing import Callable, Iterator, NamedTuple

from mokka.nri.staged_client import StagedClient, StagedError

LOCK_WAIT_S = 0.2
LOCK_RETRY_S = 0.01
HTTP_TIMEOUT_S = 0.5

DISABLED = "staging gate not configured"
STAGED = "node agent reports the tree staged"


#: A check's outcome as the plugin's /metrics labels it (gate_checks_total{outcome}).
OPEN, STAGING, NOT_STAGED, UNREACHABLE, LOCK_UNAVAILABLE = (
    "open", "staging", "not_staged", "unreachable", "lock_unavailable")
OUTCOMES = (OPEN, STAGING, NOT_STAGED, UNREACHABLE, LOCK_UNAVAILABLE)
_STAGING_REASON = "node agent is staging (staging lock held)"


def outcome(verdict: "Verdict") -> str:
    """One of OUTCOMES: a bounded label for a verdict whose reason is free text."""
    if verdict.ok:
        return OPEN
    if verdict.reason == _STAGING_REASON:
        return STAGING
    if verdict.reason.startswith("node agent unreachable"):
        return UNREACHABLE
    if verdict.reason.startswith("staging lock unavailable"):
        return LOCK_UNAVAILABLE
    return NOT_STAGED


class Verdict(NamedTuple):
    ok: bool
    reason: str


class StagingGate:
    """Staging lock (shared) + /stagedz check, and the /readyz view of it."""

    def __init__(self, agent_staged_url: str = "", staging_lock_path: str = "", *,
                 lock_wait_s: float = LOCK_WAIT_S, http_timeout_s: float = HTTP_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.agent_staged_url = agent_staged_url
        self.staging_lock_path = staging_lock_path
        self._lock_wait_s = lock_wait_s
        self._clock = clock
        self._sleep = sleep
        self._state = threading.Lock()
        self._last_failure: str | None = None
        self._client = StagedClient(agent_staged_url, http_timeout_s)

    @property
    def enabled(self) -> bool:
        return bool(self.agent_staged_url and self.staging_lock_path)

    @property
    def last_failure(self) -> str | None:
        """Reason of the last closed check, cleared by the next one that passes."""
        with self._state:
            return self._last_failure

    @contextlib.contextmanager
    def hold(self) -> Iterator[Verdict]:
        """Take the shared lock, check /stagedz, and keep the lock for the block.

        Yields the verdict; when it is not ok nothing is held and the caller
        leaves the container unmodified.
        """
        if not self.enabled:
            yield Verdict(True, DISABLED)
            return
        fd, verdict = self._lock_shared()
        try:
            if fd is not None:
                verdict = self._get_staged()
            yield self._remember(verdict)
        finally:
            if fd is not None:
                os.close(fd)     # closing the only descriptor releases the flock

    def check(self) -> Verdict:
        """One gate check, released at once."""
        with self.hold() as verdict:
            return verdict

    def ready(self) -> Verdict:
        """For /readyz: re-ask /stagedz (bounded; no lock, a probe never waits
        on staging) and report the failure reason until the gate opens again."""
        if not self.enabled:
            return Verdict(True, DISABLED)
        return self._remember(self._get_staged())

    def _remember(self, verdict: Verdict) -> Verdict:
        with self._state:
            self._last_failure = None if verdict.ok else verdict.reason
        return verdict

    def _lock_shared(self) -> tuple[int | None, Verdict]:
        try:
            fd = os.open(self.staging_lock_path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            # The agent has not created it yet; creating it ourselves is harmless
            # (both sides lock the same inode) and lets the check go on.
            try:
                fd = os.open(self.staging_lock_path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                return None, Verdict(False, f"staging lock unavailable: {exc}")
        except OSError as exc:
            return None, Verdict(False, f"staging lock unavailable: {exc}")
        deadline = self._clock() + self._lock_wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return fd, Verdict(True, "")
            except BlockingIOError:
                pass
            except OSError as exc:
                os.close(fd)
                return None, Verdict(False, f"staging lock unavailable: {exc}")
            remaining = deadline - self._clock()
            if remaining <= 0:
                os.close(fd)
                return None, Verdict(False, _STAGING_REASON)
            self._sleep(min(LOCK_RETRY_S, remaining))

    def _get_staged(self) -> Verdict:
        try:
            status, body = self._client.get()
        except StagedError as exc:
            return Verdict(False, f"node agent unreachable at {self.agent_staged_url}: {exc}")
        if 200 <= status < 300:
            return Verdict(True, STAGED)
        detail = f": {body}" if body else ""
        return Verdict(False, f"node agent not staged (HTTP {status}){detail}")
