"""The supervisor alone: restart after an unexpected exit, readiness naming the daemon
while it is down, no restart once told to stop."""

from __future__ import annotations

import threading

from tests.waiting import wait_until

from mokka.agent.supervisor import ProcessChild, Supervisor, ThreadChild, describe_status
from mokka.core import log as mlog


def test_a_crashed_child_is_restarted_and_ready_names_it_in_between():
    release = threading.Event()
    starts = []

    def target(stop):
        starts.append(1)
        if len(starts) == 1:
            release.wait(30)
            raise RuntimeError("boom")
        stop.wait()

    sup = Supervisor("kernellog", lambda: ThreadChild("t", target), mlog.get("test"), backoff_min=0.2)
    assert sup.ready() == (False, "not started yet")
    sup.start()
    wait_until(lambda: sup.ready()[0], what="up")
    release.set()
    wait_until(lambda: not sup.ready()[0], what="down")
    assert sup.ready()[1].startswith("kernellog crashed: RuntimeError: boom; restarting in 0.2s (restart 1)")
    wait_until(lambda: sup.ready()[0] and len(starts) == 2, what="restarted")
    sup.stop()
    assert sup.ready() == (False, "stopped") and len(starts) == 2 and sup.restarts == 1


def test_stop_never_restarts_a_process():
    sup = Supervisor("sleeper", lambda: ProcessChild(["sleep", "600"]), mlog.get("test"))
    sup.start()
    wait_until(lambda: sup.child is not None, what="the child")
    child = sup.child
    sup.stop()
    assert child.proc.returncode is not None and sup.restarts == 0 and sup.child is None


def test_exit_reasons_name_the_signal():
    assert describe_status(-9) == "killed by SIGKILL"
    assert describe_status(1) == "exited with status 1"
