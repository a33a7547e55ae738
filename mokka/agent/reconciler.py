"""One reconcile pass in three waves, and teardown as its inverse.

Stage collects EVERY error (one pass names everything wrong); a failed barrier
starts no daemon and applies nothing. Daemons start once, on the first good
barrier, and are Reloaded after. Apply fails fast because appliers build on one
another (the CDI spec names device nodes gpudriver staged). Teardown is
best-effort and runs against its own deadline, not the cancelled run's.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from mokka.agent.desired import Desired
from mokka.agent.health import Health
from mokka.agent.lock import StagingLock
from mokka.agent.simulator import Applier, Daemon, Simulator


@dataclass
class PassResult:
    generation: int
    stage_errors: dict[str, str] = field(default_factory=dict)
    apply_error: str | None = None
    started: list[str] = field(default_factory=list)
    reloaded: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.stage_errors and self.apply_error is None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Reconciler:
    def __init__(self, sims: list[Simulator], health: Health, lock: StagingLock, log,
                 clock=time.monotonic):
        for sim in sims:
            if not isinstance(sim, Simulator):
                raise TypeError(f"{sim!r} does not implement Simulator")
        self.sims = list(sims)
        self.health = health
        self.lock = lock
        self.log = log
        self.clock = clock
        self.stop = threading.Event()           # tells daemons to wind down
        self._started: set[str] = set()
        self._pool = ThreadPoolExecutor(max_workers=max(len(self.sims), 1),
                                        thread_name_prefix="sim")

    @property
    def appliers(self) -> list:
        return [s for s in self.sims if isinstance(s, Applier)]

    @property
    def daemons(self) -> list:
        return [s for s in self.sims if isinstance(s, Daemon)]

    def reconcile(self, desired: Desired, start_daemons: bool = True) -> PassResult:
        started = self.clock()
        result = self._reconcile(desired, start_daemons)
        self.health.pass_finished(result.ok, self.clock() - started)
        return result

    def _reconcile(self, desired: Desired, start_daemons: bool) -> PassResult:
        result = PassResult(desired.generation)
        result.stage_errors = self._stage(desired)
        if result.stage_errors:
            self.log.error("stage wave failed: nothing started or applied",
                           generation=desired.generation, failed=result.stage_errors)
            return result
        if start_daemons:
            self._supervise(desired, result)
        result.apply_error = self._apply(desired)
        self.health.apply_finished(result.apply_error)
        if result.apply_error is None:
            self.log.info("converged", generation=desired.generation, digest=desired.digest,
                          gpus=desired.gpu_count)
        return result

    def _stage(self, desired: Desired) -> dict[str, str]:
        self.lock.acquire()
        try:
            self.health.stage_started()
            futures = {s.name: self._pool.submit(s.stage, desired) for s in self.sims}
            errors = {}
            for name, fut in futures.items():
                exc = fut.exception()
                if exc is not None:
                    errors[name] = _describe(exc)
            self.health.stage_finished(desired.generation, desired.digest, errors)
            return errors
        finally:
            self.lock.release()

    def _supervise(self, desired: Desired, result: PassResult) -> None:
        """Start each daemon once, Reload it after. Fail open: a daemon that cannot
        start or reload is logged (its readiness says why) and never stops the pass;
        one that did not start is tried again on the next pass."""
        for d in self.daemons:
            verb = "reload" if d.name in self._started else "run"
            try:
                if verb == "reload":
                    d.reload(desired)
                else:
                    d.run(desired, self.stop)
            except Exception as exc:  # noqa: BLE001 - fail open
                self.log.error(f"daemon {verb} failed; the node keeps serving", simulator=d.name,
                               generation=desired.generation, error=_describe(exc))
                continue
            if verb == "reload":
                result.reloaded.append(d.name)
            else:
                self._started.add(d.name)
                result.started.append(d.name)

    def _apply(self, desired: Desired) -> str | None:
        futures = {self._pool.submit(a.apply, desired): a.name for a in self.appliers}
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for fut in done:
            if fut.exception() is not None:
                for p in pending:
                    p.cancel()          # not yet running: leave them unpublished
                error = f"{futures[fut]}: {_describe(fut.exception())}"
                self.log.error("apply wave failed", generation=desired.generation, error=error)
                return error
        return None

    # --- teardown ------------------------------------------------------------
    def teardown(self, timeout: float, after=None) -> bool:
        """Revoke every applier, then Discard every simulator; True if all finished in time.

        Waits at most half of ``timeout`` for the staging lock, then tears down
        without it: a plugin holding it shared must not keep the node staged.
        ``after`` runs last (still under the lock), e.g. ``loop.finish``.
        """
        deadline = self.clock() + timeout
        self.stop.set()
        locked = self.lock.acquire(timeout / 2)
        if not locked:
            self.log.warning("staging lock not free after half the shutdown timeout: "
                             "tearing down without it", timeout_s=timeout)
        self.health.teardown_started()
        try:
            ok = self._best_effort("revoke", self.appliers, deadline)
            ok = self._best_effort("discard", self.sims, deadline) and ok
            if after is not None:
                if self.clock() >= deadline:
                    ok = False
                else:
                    try:
                        after()
                    except Exception as exc:  # noqa: BLE001 - best effort: the manifest stays
                        self.log.error("teardown could not finish; its manifest stays for the "
                                       "next --teardown", error=_describe(exc))
                        ok = False
            return ok
        finally:
            self.lock.release()

    def _best_effort(self, verb: str, sims: list, deadline: float) -> bool:
        # Fresh daemon threads, not the pool: a wedged Stage must not block teardown.
        threads, errors = [], {}

        def call(sim):
            try:
                getattr(sim, verb)()
            except BaseException as exc:  # noqa: BLE001 - best effort: log and go on
                errors[sim.name] = _describe(exc)

        for sim in sims:
            t = threading.Thread(target=call, args=(sim,), name=f"{verb}-{sim.name}", daemon=True)
            t.start()
            threads.append((sim.name, t))
        late = []
        for name, t in threads:
            t.join(max(deadline - self.clock(), 0))
            if t.is_alive():
                late.append(name)
        for name, err in errors.items():
            self.log.error(f"{verb} failed; carrying on", simulator=name, error=err)
        if late:
            self.log.error(f"{verb} did not finish before the shutdown deadline", simulators=late)
        return not errors and not late

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
