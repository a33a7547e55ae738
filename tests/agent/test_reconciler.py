"""The three waves and teardown, with fake simulators (no filesystem but the lock)."""

from __future__ import annotations

import os

import pytest

from mokka.agent import desired as ds
from mokka.agent.health import Health
from mokka.agent.lock import StagingLock
from mokka.agent.reconciler import Reconciler
from mokka.agent.simulator import Applier, Daemon, Simulator
from mokka.core import log as mlog
from mokka.core import profile as prof


class FakeSim:
    def __init__(self, name, calls, fail_stage=False):
        self.name, self.calls, self.fail_stage = name, calls, fail_stage

    def stage(self, desired):
        self.calls.append(("stage", self.name))
        if self.fail_stage:
            raise RuntimeError(f"{self.name} cannot stage")

    def discard(self):
        self.calls.append(("discard", self.name))

    def ready(self):
        return True, ""


class FakeApplier(FakeSim):
    def __init__(self, name, calls, fail_apply=False, fail_revoke=False, **kw):
        super().__init__(name, calls, **kw)
        self.fail_apply, self.fail_revoke = fail_apply, fail_revoke

    def apply(self, desired):
        self.calls.append(("apply", self.name))
        if self.fail_apply:
            raise OSError("read-only file system")

    def revoke(self):
        self.calls.append(("revoke", self.name))
        if self.fail_revoke:
            raise RuntimeError("revoke exploded")


class FakeDaemon(FakeSim):
    def run(self, desired, stop):
        self.calls.append(("run", self.name))

    def reload(self, desired):
        self.calls.append(("reload", self.name))


@pytest.fixture
def desired():
    path, text = prof.read("a100")
    return ds.build(1, "a100", path, ds.with_num_devices(text, 2))


def make(tmp_path, sims):
    health = Health(readiness=lambda: ((s.name, *s.ready()) for s in sims), now=lambda: 1_700_000_000)
    lock = StagingLock(os.path.join(tmp_path, "staging.lock"))
    return Reconciler(sims, health, lock, mlog.get("test")), health


def test_interfaces_are_checked_by_shape():
    calls = []
    assert isinstance(FakeSim("s", calls), Simulator) and not isinstance(FakeSim("s", calls), Applier)
    assert isinstance(FakeApplier("a", calls), Applier)
    assert isinstance(FakeDaemon("d", calls), Daemon)


def test_a_failing_stage_stops_apply_and_daemons_and_healthz_names_every_failure(tmp_path, desired):
    calls = []
    sims = [FakeSim("good", calls), FakeApplier("bad1", calls, fail_stage=True),
            FakeSim("bad2", calls, fail_stage=True), FakeDaemon("d", calls)]
    rec, health = make(tmp_path, sims)
    result = rec.reconcile(desired)
    assert set(result.stage_errors) == {"bad1", "bad2"}          # every error, not the first
    assert {c for c in calls if c[0] == "stage"} == {("stage", s.name) for s in sims}
    assert not [c for c in calls if c[0] in ("apply", "run", "reload")]
    code, body = health.healthz()
    assert code == 503 and set(body["failed"]) == {"bad1", "bad2"} and "failed_at" in body
    assert health.stagedz()[0] == 503


def test_healthz_recovers_on_the_next_good_stage(tmp_path, desired):
    calls = []
    bad = FakeSim("flaky", calls, fail_stage=True)
    rec, health = make(tmp_path, [bad])
    rec.reconcile(desired)
    assert health.healthz()[0] == 503
    bad.fail_stage = False
    assert rec.reconcile(desired).ok
    assert health.healthz() == (200, {"generation": 1})


def test_a_failing_apply_does_not_close_stagedz(tmp_path, desired):
    calls = []
    rec, health = make(tmp_path, [FakeApplier("nfd", calls, fail_apply=True)])
    result = rec.reconcile(desired)
    assert result.apply_error and "read-only" in result.apply_error
    code, body = health.stagedz()
    assert code == 200 and body["digest"] == desired.digest and body["generation"] == 1


def test_daemons_start_once_then_reload(tmp_path, desired):
    calls = []
    rec, _ = make(tmp_path, [FakeDaemon("fm", calls)])
    for _ in range(3):
        rec.reconcile(desired)
    assert [c for c in calls if c[0] in ("run", "reload")] == [
        ("run", "fm"), ("reload", "fm"), ("reload", "fm")]


class FlakyDaemon(FakeDaemon):
    """Run fails the first time, Reload always: the pass goes on (fail open)."""

    def run(self, desired, stop):
        super().run(desired, stop)
        if sum(1 for c in self.calls if c == ("run", self.name)) == 1:
            raise OSError("port in use")

    def reload(self, desired):
        super().reload(desired)
        raise RuntimeError("reload exploded")


def test_a_daemon_that_cannot_start_fails_open_and_is_tried_again(tmp_path, desired):
    calls = []
    rec, _ = make(tmp_path, [FlakyDaemon("fm", calls), FakeApplier("a", calls)])
    first = rec.reconcile(desired)
    assert first.ok and first.started == [] and ("apply", "a") in calls
    second = rec.reconcile(desired)
    assert second.ok and second.started == ["fm"]
    third = rec.reconcile(desired)
    assert third.ok and third.reloaded == [] and calls.count(("apply", "a")) == 3
    assert [c for c in calls if c[0] in ("run", "reload")] == [("run", "fm"), ("run", "fm"), ("reload", "fm")]


def test_daemons_start_only_after_apply_order_is_stage_run_apply(tmp_path, desired):
    calls = []
    rec, _ = make(tmp_path, [FakeDaemon("fm", calls), FakeApplier("a", calls)])
    rec.reconcile(desired)
    verbs = [c[0] for c in calls]
    assert verbs.index("run") > max(i for i, v in enumerate(verbs) if v == "stage")
    assert verbs.index("apply") > verbs.index("run")


def test_a_failing_revoke_does_not_stop_discard(tmp_path, desired):
    calls = []
    sims = [FakeApplier("a", calls, fail_revoke=True), FakeApplier("b", calls), FakeSim("c", calls)]
    rec, health = make(tmp_path, sims)
    assert rec.teardown(timeout=5) is False                      # reported, not raised
    assert {("revoke", "a"), ("revoke", "b")} <= set(calls)
    assert {("discard", "a"), ("discard", "b"), ("discard", "c")} <= set(calls)
    revokes = [i for i, c in enumerate(calls) if c[0] == "revoke"]
    discards = [i for i, c in enumerate(calls) if c[0] == "discard"]
    assert max(revokes) < min(discards)
    assert health.stagedz()[0] == 503


def test_teardown_waits_at_most_half_the_timeout_for_the_lock(tmp_path, monkeypatch):
    import fcntl
    from types import SimpleNamespace
    from mokka.agent import lock as lockmod

    # A fake clock that moves only when the lock sleeps between polls.
    now = [100.0]
    monkeypatch.setattr(lockmod, "time", SimpleNamespace(sleep=lambda s: now.__setitem__(0, now[0] + s)))
    clock = lambda: now[0]                                       # noqa: E731
    calls, after = [], []
    health = Health(readiness=lambda: iter(()), now=lambda: 1_700_000_000)
    lock = StagingLock(os.path.join(tmp_path, "staging.lock"), clock=clock)
    rec = Reconciler([FakeSim("s", calls)], health, lock, mlog.get("test"), clock=clock)
    fd = os.open(lock.path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH)                               # the NRI plugin, stuck
    try:
        assert rec.teardown(timeout=10.0, after=lambda: after.append(now[0])) is True
    finally:
        os.close(fd)
    assert after == [pytest.approx(105.0, abs=0.05)]             # gave up after 5 of the 10 s
    assert ("discard", "s") in calls                             # and tore down anyway
    assert not lock.held


def test_readyz_names_the_simulator_that_is_not_ready(tmp_path):
    class NotReady(FakeSim):
        def ready(self):
            return False, "CDI specs not published yet"
    calls = []
    _, health = make(tmp_path, [FakeSim("a", calls), NotReady("cri", calls)])
    assert health.readyz() == (503, {"ready": False, "simulator": "cri",
                                     "reason": "CDI specs not published yet"})


def scrape(health: Health) -> dict:
    from prometheus_client.parser import text_string_to_metric_families
    status, body = health.metrics()
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def test_metrics_count_passes_stage_errors_by_simulator_generation_and_daemons(tmp_path, desired):
    calls, up = [], {"d": True}
    sims = [FakeSim("good", calls), FakeSim("bad", calls, fail_stage=True), FakeDaemon("d", calls)]
    ticks = iter([10.0, 10.25, 20.0, 20.5])
    health = Health(daemons=lambda: up.items(), simulators=[s.name for s in sims])
    rec = Reconciler(sims, health, StagingLock(os.path.join(tmp_path, "staging.lock")),
                     mlog.get("test"), clock=lambda: next(ticks))
    assert scrape(health)[("mokka_agent_stage_errors_total", (("simulator", "bad"),))] == 0
    assert not rec.reconcile(desired).ok
    sims[1].fail_stage = False
    up["d"] = False
    assert rec.reconcile(desired).ok
    got = scrape(health)
    assert got[("mokka_agent_reconcile_passes_total", (("result", "failed"),))] == 1
    assert got[("mokka_agent_reconcile_passes_total", (("result", "ok"),))] == 1
    assert got[("mokka_agent_reconcile_duration_seconds_sum", ())] == 0.75
    assert got[("mokka_agent_reconcile_duration_seconds_bucket", (("le", "0.25"),))] == 1
    assert got[("mokka_agent_stage_errors_total", (("simulator", "bad"),))] == 1
    assert got[("mokka_agent_stage_errors_total", (("simulator", "good"),))] == 0
    assert got[("mokka_agent_generation", ())] == 1
    assert got[("mokka_agent_staged", ())] == 1
    assert got[("mokka_agent_daemon_up", (("simulator", "d"),))] == 0
