"""The Xid events document (xid-events.yaml and its companion): the one way events are added.

Two writers add events: the agent's kernellog (the Xids a profile injects, as the
profile changes) and ``mokka ctl xid`` (one Xid, now) or ``ctl ecc`` (an ECC error's
event and its Xids, now). Both hold the config
directory's lock, read what the document holds, let mokka.core.xid number what is
new after its last event, and publish the pair in the engine's order
(mokka.engine.pair). A document that is not one Mokka wrote is replaced whole,
numbered from 1, after the writer was told why.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Callable

from mokka.core import xid
from mokka.engine import pair

#: What is new, from what the document holds: (previous events, its last number) ->
#: (every event to keep, the new ones, the last number).
Step = Callable[[list[xid.Event], int], tuple[list[xid.Event], list[xid.Event], int]]


def record(path: str, step: Step, *, lock: AbstractContextManager,
           publish: Callable[[dict[str, bytes]], object] = pair.publish,
           refused: Callable[[xid.Refused], object] = lambda exc: None) -> tuple[list[xid.Event], int]:
    """Add ``step``'s events to the document at ``path`` under ``lock``; the new events
    and the last number. ``publish`` writes the pair (mokka.engine.pair.entries, in its
    order; the agent passes its own file system); ``refused`` hears why a document there
    was not one Mokka wrote before it is replaced."""
    with lock:
        try:
            previous, last = xid.load(path)
        except xid.Refused as exc:
            refused(exc)
            previous, last = [], 0
        events, new, last = step(previous, last)
        text, companion = xid.render(events, last)
        publish(pair.entries(path, text, companion))
    return new, last


def inject(injection: xid.Injection) -> Step:
    """The step of one Xid raised now (``mokka ctl xid``): numbered even when the pair is listed."""
    def step(previous: list[xid.Event], last: int):
        events, event, last = xid.inject(previous, injection, last)
        return events, [event], last
    return step


def inject_all(injections: list[xid.Injection]) -> Step:
    """The step of several events raised now, in order (``mokka ctl ecc``: the ECC event,
    then the Xids the driver logs for it)."""
    def step(previous: list[xid.Event], last: int):
        events, new = previous, []
        for injection in injections:
            events, event, last = xid.inject(events, injection, last)
            new.append(event)
        return events, new, last
    return step


def injected_by(wanted: list[xid.Injection], seen_last: int = 0) -> Step:
    """The step of the Xids a profile injects (kernellog): each announced once while it
    stays; numbering continues after ``seen_last`` too, the last number this writer gave."""
    def step(previous: list[xid.Event], last: int):
        return xid.next_events(previous, wanted, max(last, seen_last))
    return step
