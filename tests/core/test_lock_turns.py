"""The config directory's lock is waited for per holder: a queue of writers hands it on,
one process that keeps it is given up on after the wait."""

from __future__ import annotations

import fcntl
import os

from mokka.core import fsutil


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 0.05
        return self.now


def _held_dir(tmp_path):
    keeper = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(keeper, fcntl.LOCK_EX)
    waiter = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    return keeper, waiter


def test_one_holder_that_keeps_the_lock_is_given_up_on_after_the_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(fsutil.time, "sleep", lambda s: None)
    keeper, waiter = _held_dir(tmp_path)
    clock = Clock()
    try:
        assert fsutil.flock_within(waiter, 5.0, clock=clock, holder=lambda fd: "4242") is False
        assert 5.0 <= clock.now < 5.2
    finally:
        os.close(waiter)
        os.close(keeper)


def test_each_new_holder_starts_the_wait_again_up_to_six_turns(tmp_path, monkeypatch):
    monkeypatch.setattr(fsutil.time, "sleep", lambda s: None)
    keeper, waiter = _held_dir(tmp_path)
    clock = Clock()
    # A new writer holds the lock every 4 s: never 5 s of one holder, so only the cap ends it.
    try:
        assert fsutil.flock_within(waiter, 5.0, clock=clock,
                                   holder=lambda fd: str(1000 + int(clock.now // 4))) is False
        assert 30.0 <= clock.now < 30.2
    finally:
        os.close(waiter)
        os.close(keeper)


def test_a_free_lock_is_taken_at_once(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert fsutil.flock_within(fd, 5.0) is True
    finally:
        os.close(fd)
