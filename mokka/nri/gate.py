"""The staging gate: adjust only while the node agent reports its tree staged.

Seed 000, "Failing open". Before each adjustment the plugin takes the SHARED
side of the staging lock (the agent holds it exclusively while it stages or
tears down the driver tree) and asks the agent's /stagedz whether the tree is
staged. Only a 2xx passes. The lock is held while the decision is made, so a
teardown cannot start underneath it (it covers the decision, not the runtime
applying it).

Everything is bounded well inside the runtime's 2 s request budget, even when
the agent hangs: the lock is retried non-blocking for at most ``lock_wait_s``
(~200 ms) and the HTTP exchange is given ``http_timeout_s`` (500 ms) in TOTAL
— a deadline, not urllib's per-operation timeout, so an agent that trickles
bytes cannot stretch it either.

The gate is open (passes everything) unless BOTH the URL and the lock path
are configured; the command line requires them together.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Callable, Iterator, NamedTuple

LOCK_WAIT_S = 0.2
LOCK_RETRY_S = 0.01
HTTP_TIMEOUT_S = 0.5
#: How much of the agent's failure body is kept for the reason (it is shown in
#: kubectl describe through /readyz, so it must stay short).
REASON_BODY_LIMIT = 200

DISABLED = "staging gate not configured"
STAGED = "node agent reports the tree staged"


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
        self._http_timeout_s = http_timeout_s
        self._clock = clock
        self._sleep = sleep
        self._state = threading.Lock()
        self._last_failure: str | None = None
        # No proxies (a pod-local URL must not go through HTTP_PROXY), no
        # redirects, no error raising for non-2xx: the status is all we read.
        self._opener = urllib.request.OpenerDirector()
        self._opener.add_handler(_DeadlineHTTPHandler())
        self._opener.add_handler(urllib.request.UnknownHandler())   # other schemes: URLError

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
                return None, Verdict(False, "node agent is staging (staging lock held)")
            self._sleep(min(LOCK_RETRY_S, remaining))

    def _get_staged(self) -> Verdict:
        try:
            request = urllib.request.Request(self.agent_staged_url, method="GET")
            with self._opener.open(request, timeout=self._http_timeout_s) as response:
                if 200 <= response.status < 300:
                    return Verdict(True, STAGED)
                body = response.read(REASON_BODY_LIMIT).decode("utf-8", "replace").strip()
                detail = f": {body}" if body else ""
                return Verdict(False, f"node agent not staged (HTTP {response.status}){detail}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            # OSError covers URLError, refused connections and the deadline;
            # ValueError an unparsable URL.
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            return Verdict(False, f"node agent unreachable at {self.agent_staged_url}: "
                                  f"{reason or type(exc).__name__}")


class _DeadlineSocket(socket.socket):
    """A socket whose every blocking call shares one deadline.

    urllib's timeout applies per operation, so a peer sending a byte every
    400 ms would never trip a 500 ms timeout. Before each receive or send the
    timeout is cut to what is left of the deadline.
    """

    deadline = 0.0

    def _arm(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline exceeded")
        self.settimeout(remaining)

    def recv_into(self, *args, **kwargs):
        self._arm()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args, **kwargs):
        self._arm()
        return super().recv(*args, **kwargs)

    def sendall(self, *args, **kwargs):
        self._arm()
        return super().sendall(*args, **kwargs)


class _DeadlineConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        deadline = time.monotonic() + (self.timeout if isinstance(self.timeout, (int, float)) else HTTP_TIMEOUT_S)
        raw = socket.create_connection((self.host, self.port), self.timeout, self.source_address)
        sock = _DeadlineSocket(raw.family, raw.type, raw.proto, fileno=raw.detach())
        sock.deadline = deadline
        self.sock = sock


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_DeadlineConnection, req)
