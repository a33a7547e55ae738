"""Which Xid a profile injects, the kernel-log line, and the event numbering (pure)."""

from __future__ import annotations

import os

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
    ({"xid": {"code": "\u0663\u0661"}}, None),
    ({"xid": {"code": 999}}, 999),
    ({"xid": {"code": 1000}}, None),
    ({"xid": {"code": "9" * 5000}}, None),
], ids=["no failure block", "healthy", "fallen off the bus implies 79", "lost implies 79 (any case)",
        "ecc implies 48", "an explicit code wins over the mode's", "a code alone injects",
        "a numeric string is a code", "code 0 is none", "a boolean is not a code",
        "Arabic-Indic digits are not a code", "999 is the last code", "1000 is past the codes",
        "5000 digits are no code (and no exception)"])
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


def test_a_mig_devices_kernel_line_names_its_instances_as_nvrm_does():
    inj = xid.Injection(3, "GPU-3", "00000000:8B:00.0", 79, 5, 0)
    assert xid.kmsg_line(inj, "kind-worker") == (
        "NVRM: Xid (PCI:0000:8b:00 GPU-I:05 GPU-CI:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus. node=kind-worker")
    gi_only = xid.Injection(3, "GPU-3", "00000000:8B:00.0", 94, 12)
    assert xid.kmsg_line(gi_only, "kind-worker").startswith("NVRM: Xid (PCI:0000:8b:00 GPU-I:12): 94, ")


def test_a_mig_devices_event_keeps_its_instance_ids_through_the_document():
    from mokka.core import yamlio
    whole = xid.Injection(0, "GPU-0", "0000:1A:00.0", 48)
    events = [xid.Event(1, xid.Injection(0, "GPU-0", "0000:1A:00.0", 79, 9, 0)),
              xid.Event(2, xid.Injection(0, "GPU-0", "0000:1A:00.0", 43, 3)), xid.Event(3, whole)]
    text, companion = xid.render(events, 3)
    assert xid.parse(yamlio.safe_load(text)) == (events, 3)
    assert companion.decode().splitlines()[3:] == [
        "event.0.ci 0", "event.0.code 79", "event.0.gi 9", "event.0.gpu 0", "event.0.seq 1",
        "event.1.code 43", "event.1.gi 3", "event.1.gpu 0", "event.1.seq 2",
        "event.2.code 48", "event.2.gpu 0", "event.2.seq 3", "event.len 3", "last_seq 3"]


def test_ctl_injection_takes_the_next_number_even_for_a_listed_pair():
    from mokka.core.xid import Event, Injection, inject
    gpu1 = Injection(1, "GPU-1", "00000000:0B:00.0", 79)
    events, event, last = inject([Event(4, gpu1)], gpu1, last_seq=6)
    assert (event.seq, last) == (7, 7)
    assert [e.seq for e in events] == [4, 7]
    assert inject([], gpu1)[1:] == (Event(1, gpu1), 1)



GOOD = {"version": 1, "last_seq": 3,
        "events": [{"seq": 3, "gpu": 0, "uuid": "GPU-0", "bus_id": "0000:0A:00.0", "code": 79}]}


def spoilt(**change) -> dict:
    doc = {**GOOD, "events": [dict(GOOD["events"][0])]}
    for key, value in change.items():
        if key.startswith("event_"):
            doc["events"][0][key[len("event_"):]] = value
        else:
            doc[key] = value
    return doc


@pytest.mark.parametrize("doc, reason", [
    ([1, 2], "not a mapping"),
    (spoilt(events=5), "events is not a list"),
    (spoilt(events={"seq": 1}), "events is not a list"),
    (spoilt(last_seq=18446744073709551615), "last_seq is not an integer from 0 to 9007199254740991"),
    (spoilt(last_seq=-1), "last_seq is not an integer"),
    (spoilt(last_seq="3"), "last_seq is not an integer"),
    (spoilt(last_seq=True), "last_seq is not an integer"),
    (spoilt(event_seq=4), "event 0: seq is not an integer from 1 to 3"),
    (spoilt(event_seq=0), "event 0: seq is not an integer from 1 to 3"),
    (spoilt(event_gpu=64), "event 0: gpu is not an integer from 0 to 63"),
    (spoilt(event_code=2**32), "event 0: code is not an integer from 1 to 4294967295"),
    (spoilt(event_uuid=["x"]), "event 0: uuid and bus_id are not strings"),
    (spoilt(event_uuid="G" * 65), "event 0: uuid and bus_id are not strings"),
    (spoilt(events=[7]), "event 0 is not a mapping"),
    (spoilt(event_gi=15), "event 0: gi is not an integer from 0 to 14"),
    (spoilt(event_gi=9, event_ci=8), "event 0: ci is not an integer from 0 to 7"),
    (spoilt(event_ci=0), "event 0: ci is given without gi"),
    (spoilt(last_seq=5000, events=[{**GOOD["events"][0], "seq": n} for n in range(1, 1026)]),
     "more than 1024 events"),
], ids=["a list", "events a number", "events a mapping", "last_seq 2^64-1", "negative last_seq",
        "last_seq a string", "last_seq a boolean", "seq past last_seq", "seq 0", "gpu past 63",
        "code past 2^32", "uuid a list", "uuid too long", "event a number", "gi past 14", "ci past 7", "ci without gi",
        "1025 events"])
def test_a_document_not_as_written_is_refused_whole(doc, reason):
    with pytest.raises(xid.Refused) as got:
        xid.parse(doc)
    assert str(got.value).startswith(reason)


def test_the_numbering_starts_again_before_it_passes_the_readers_bound():
    gpu0 = xid.Injection(0, "GPU-0", "", 79)
    top = 2**53 - 1
    events, event, last = xid.inject([xid.Event(top - 1, gpu0)], gpu0, last_seq=top - 1)
    assert (event.seq, last) == (top, top)
    events, event, last = xid.inject(events, gpu0, last)
    assert (events, event, last) == ([xid.Event(1, gpu0)], xid.Event(1, gpu0), 1)
    current, new, last = xid.next_events([xid.Event(top, gpu0)], [gpu0, xid.Injection(1, "GPU-1", "", 13)], top)
    assert [e.seq for e in current] == [1, 2] and new == current and last == 2


def test_ctl_keeps_the_newest_1024_events():
    gpu0 = xid.Injection(0, "GPU-0", "", 79)
    events, last = [], 0
    for _ in range(1030):
        events, _, last = xid.inject(events, gpu0, last)
    assert len(events) == 1024 and [events[0].seq, events[-1].seq, last] == [7, 1030, 1030]


@pytest.mark.parametrize("make, reason", [
    (lambda p: os.mkfifo(p), "it is a FIFO, not a regular file"),
    (lambda p: os.makedirs(p), "it is a directory, not a regular file"),
    (lambda p: os.symlink("/etc/hostname", p), "it is a symbolic link, not a regular file"),
    (lambda p: open(p, "wb").write(b"a" * (256 * 1024 + 1)), "it is 262145 bytes, over the limit"),
    (lambda p: open(p, "wb").write(b"events: [\n"), "not valid YAML"),
], ids=["fifo", "directory", "link", "too large", "not YAML"])
def test_load_refuses_without_blocking_or_following(tmp_path, make, reason):
    path = str(tmp_path / "xid-events.yaml")
    make(path)
    with pytest.raises(xid.Refused) as got:
        xid.load(path)
    assert str(got.value).startswith(reason)


def test_load_of_an_absent_file_is_no_events(tmp_path):
    assert xid.load(str(tmp_path / "xid-events.yaml")) == ([], 0)
