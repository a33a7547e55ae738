"""The one bounded wait every test uses instead of sleeping."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimedOut(AssertionError):
    """A condition a test waited for did not hold in time (a test failure)."""


def wait_until(predicate: Callable[[], T], what: str | Callable[[], str], *,
               timeout: float = 15.0, interval: float = 0.01) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    After ``timeout`` seconds raise WaitTimedOut naming ``what`` was waited
    for (a callable is asked only then, so it can describe the state the wait
    ended in: a log tail, the last reply). An exception from the predicate
    propagates at once: a predicate that may fail before the condition holds
    says so itself.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = what() if callable(what) else what
            raise WaitTimedOut(f"timed out after {timeout:g}s waiting for {text}")
        time.sleep(interval)
