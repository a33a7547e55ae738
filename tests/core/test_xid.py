"""Which Xid a profile injects, the kernel-log line, and the event numbering (pure)."""

from __future__ import annotations

import pytest

from mokka.core import xid


def gpu(index, failure=None, bus="0000:0A:00.0"):
    g = {"index": index, "uuid": f"GPU-{index}", "pci": {"bus_id": bus}}
    if failure is not None:
        g["failure"] = failure
    return g


@pytest.mark.parametrize("failure, code", [
    (None, None),
    ({"mode": "healthy"}, None),
    ({"mode": "fallen_off_bus"}, 79),
    ({"mode": "LOST"}, 79),
    ({"mode": "ecc_uncorrectable"}, 48),
    ({"mode": "fallen_off_bus", "xid": {"code": 94}}, 94),
    ({"xid": {"code": 13}}, 13),
    ({"xid": {"code": "31"}}, 31),
    ({"xid": {"code": 0}}, None),
    ({"xid": {"code": True}}, None),
], ids=["no failure block", "healthy", "fallen off the bus implies 79", "lost implies 79 (any case)",
        "ecc implies 48", "an explicit code wins over the mode's", "a code alone injects",
        "a numeric string is a code", "code 0 is none", "a boolean is not a code"])
def test_injected_xid_of_a_gpu(failure, code):
    got = xid.injections({"gpus": [gpu(0, failure)]})
    assert [i.code for i in got] == ([code] if code else [])


def test_kernel_line_is_the_drivers_with_the_node_name():
    inj = xid.Injection(3, "GPU-3", "00000000:8B:00.0", 79)
    assert xid.kmsg_line(inj, "kind-worker") == (
        "NVRM: Xid (PCI:0000:8b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus. "
        "node=kind-worker")


def test_events_keep_their_numbers_and_a_returning_injection_gets_a_new_one():
    a, b = xid.Injection(0, "GPU-0", "", 79), xid.Injection(1, "GPU-1", "", 13)
    current, new, last = xid.next_events([], [a, b])
    assert [(e.seq, e.injection) for e in new] == [(1, a), (2, b)] and last == 2
    current, new, last = xid.next_events(current, [b, a], last)
    assert new == [] and last == 2, "a reload with the same injections announces nothing"
    current, new, last = xid.next_events(current, [b], last)
    assert new == [] and [e.seq for e in current] == [2]
    current, new, last = xid.next_events(current, [b, a], last)
    assert [(e.seq, e.injection) for e in new] == [(3, a)], "numbers are never reused"


def test_rendered_document_parses_back():
    from mokka.core import yamlio
    events, _, last = xid.next_events([], [xid.Injection(2, "GPU-2", "0000:4A:00.0", 48)])
    text, companion = xid.render(events, last)
    assert xid.parse(yamlio.safe_load(text)) == (events, 1)
    assert companion.decode().splitlines()[3:] == ["event.0.code 48", "event.0.gpu 2", "event.0.seq 1",
                                                   "event.len 1", "last_seq 1"]


def test_ctl_injection_takes_the_next_number_even_for_a_listed_pair():
    from mokka.core.xid import Event, Injection, inject
    gpu1 = Injection(1, "GPU-1", "00000000:0B:00.0", 79)
    events, event, last = inject([Event(4, gpu1)], gpu1, last_seq=6)
    assert (event.seq, last) == (7, 7)
    assert [e.seq for e in events] == [4, 7]
    assert inject([], gpu1)[1:] == (Event(1, gpu1), 1)

