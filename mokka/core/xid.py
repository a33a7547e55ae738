"""Injected Xids: which GPU of a compiled state injects which Xid, the kernel-log
line the driver would print for it, and the events document the mock NVML reads.

Pure but for ``load``, the one way its writers read the events document back: the
kernellog daemon (mokka/agent/simulators/kernellog.py) and ``mokka ctl xid`` write it.

A GPU injects an Xid when its ``failure`` block names one (``xid: {code: N}``)
or has a failing mode, which implies the Xid a real GPU would raise: 79 for
``lost`` and ``fallen_off_bus``, 48 for ``ecc_uncorrectable``. An injection is
identified by (GPU UUID, code): announced once while it stays in the profile,
and again only after it left and came back.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from mokka.core import names
from mokka.engine import flatstate
from mokka.core.profile import digest, parse_bus_id

MODE_XIDS = {"lost": 79, "fallen_off_bus": 79, "ecc_uncorrectable": 48}
#: The driver's own wording for the Xids a profile is likely to inject.
XID_TEXT = {
    13: "Graphics Engine Exception",
    31: "MMU Fault",
    43: "GPU stopped processing",
    45: "Preemptive cleanup, due to previous errors",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    74: "NVLink Error",
    79: "GPU has fallen off the bus.",
    92: "High single-bit ECC error rate",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
    119: "Timeout waiting for RPC from GSP!",
}
DEFAULT_TEXT = "Xid injected by Mokka"
KMSG_PRIORITY = "<3>"          # KERN_ERR, as the driver's printk of an Xid


#: What nvmlEventData_t.gpuInstanceId / computeInstanceId hold for an Xid no GPU or
#: compute instance is named by (nvml.h): a whole GPU's.
NO_INSTANCE = 0xFFFFFFFF


#: The NVML event types of an ECC error (nvmlEventTypeSingleBitEccError, ...DoubleBitEccError).
ECC_EVENT_TYPES = (0x1, 0x2)


@dataclass(frozen=True)
class Injection:
    gpu: int                   # the index in the state (the physical index)
    uuid: str                  # the GPU's (a MIG device's Xid names its parent GPU)
    bus_id: str
    code: int
    gi: int | None = None      # the GPU instance the Xid is attributable to; None: the whole GPU
    ci: int | None = None      # its compute instance; None: the GPU instance as a whole
    #: The NVML event type when this is no Xid (ECC_EVENT_TYPES: a single or double bit ECC
    #: error, delivered with eventData 0 and code 0); None: an Xid.
    event_type: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.uuid, self.code


@dataclass(frozen=True)
class Event:
    seq: int
    injection: Injection


#: The Xid codes Mokka injects (the driver's numbering runs below 200 today), from a
#: profile's failure block or ``mokka ctl xid``.
CODES = (1, 999)
_CODE_TEXT = re.compile(r"[0-9]{1,3}")


def _code(value) -> int | None:
    """A profile's ``xid.code`` as an Xid code: an integer in CODES, or one written as ASCII
    digits; anything else injects nothing."""
    if isinstance(value, str) and _CODE_TEXT.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if CODES[0] <= value <= CODES[1] else None


def injections(state: dict) -> list[Injection]:
    out = []
    for gpu in state.get("gpus") or []:
        failure = gpu.get("failure") if isinstance(gpu.get("failure"), dict) else {}
        xid = failure.get("xid") if isinstance(failure.get("xid"), dict) else {}
        code = _code(xid.get("code")) or MODE_XIDS.get(str(failure.get("mode") or "").lower())
        if code:
            out.append(Injection(int(gpu["index"]), str(gpu.get("uuid", "")),
                                 str((gpu.get("pci") or {}).get("bus_id", "")), code))
    return out


def _start(previous: list[Event], last_seq: int, count: int) -> tuple[list[Event], int]:
    """(the events kept, the number to count on from) to hand out ``count`` new numbers.
    Numbers never pass names.MAX_XID_SEQ (a reader refuses a document past it): a writer
    that would pass it starts the numbering again, from 1, with none of the old events."""
    seq = max([last_seq] + [e.seq for e in previous])
    if seq + count > names.MAX_XID_SEQ:
        return [], 0
    return previous, seq


def next_events(previous: list[Event], wanted: list[Injection],
                last_seq: int = 0) -> tuple[list[Event], list[Event], int]:
    """(every current event, the new ones to announce, the last sequence number):
    kept injections keep their number, new ones get the next numbers (never reused,
    so a reader's "newer than" stays true), gone ones are dropped."""
    previous, seq = _start(previous, last_seq, len(wanted))
    kept = {e.injection.key: e for e in previous}
    current, new = [], []
    for inj in wanted:
        if inj.key in kept:
            current.append(kept[inj.key])
            continue
        seq += 1
        event = Event(seq, inj)
        current.append(event)
        new.append(event)
    return current, new, seq


def inject(previous: list[Event], injection: Injection,
           last_seq: int = 0) -> tuple[list[Event], Event, int]:
    """``mokka ctl xid``: (every event, the new one, the last sequence number).

    Always a new event with the next number, even for a (GPU, code) already
    listed: each ctl call is one Xid, delivered once. The agent's kernellog keeps
    only the profile's injections on its next pass (next_events drops the rest),
    which is fine: a waiter has had the event by then, or never would have. With
    no agent to drop them, the newest names.MAX_XID_EVENTS are kept.
    """
    previous, seq = _start(previous, last_seq, 1)
    event = Event(seq + 1, injection)
    return [*previous[-(names.MAX_XID_EVENTS - 1):], event], event, seq + 1


def events_path(config_path: str) -> str:
    """``xid-events.yaml`` beside config.yaml, where native/nvml/api/xid.c looks."""
    return os.path.join(os.path.dirname(os.path.abspath(config_path)), names.XID_EVENTS_FILE)


def kernel_pci(bus_id: str) -> str:
    """``00000000:1A:00.0`` -> ``0000:1a:00``, as NVRM prints it."""
    bus = parse_bus_id(bus_id)
    if bus is None:
        return bus_id
    return f"{bus.domain & 0xFFFF:04x}:{bus.bus:02x}:{bus.device:02x}"


def kmsg_line(inj: Injection, node_name: str) -> str:
    """The driver's Xid line, then ``node=NAME``: kind nodes share one kernel log and the
    profiles give every node the same bus ids, so the node name says whose Xid it is. An
    Xid attributed to a MIG instance names it after the address as NVRM prints it
    (``PCI:0000:01:00 GPU-I:05 GPU-CI:00``; the GPU instance alone when no compute
    instance is named)."""
    text = XID_TEXT.get(inj.code, DEFAULT_TEXT)
    where = kernel_pci(inj.bus_id)
    if inj.gi is not None:
        where += f" GPU-I:{inj.gi:02d}" + (f" GPU-CI:{inj.ci:02d}" if inj.ci is not None else "")
    return (f"NVRM: Xid (PCI:{where}): {inj.code}, pid='<unknown>', name=<unknown>, "
            f"{text} node={node_name}")


# --- the events document and its companion -------------------------------------------

HEADER = (b"# Xids injected on this node, by the node agent's kernellog daemon and mokka ctl xid.\n"
          b"# The mock NVML delivers each event newer than an event set to nvmlEventSetWait.\n")


def render(events: list[Event], last_seq: int) -> tuple[bytes, bytes]:
    """(the YAML, its companion), to be written companion first."""
    events = sorted(events, key=lambda e: e.seq)
    lines = [HEADER.decode(), "version: 1\n", f"last_seq: {last_seq}\n"]
    if not events:
        lines.append("events: []\n")
    else:
        lines.append("events:\n")
        for e in events:
            i = e.injection
            where = "".join(f", {k}: {v}" for k, v in (("gi", i.gi), ("ci", i.ci), ("type", i.event_type))
                            if v is not None)
            lines.append(f"- {{seq: {e.seq}, gpu: {i.gpu}, uuid: '{i.uuid}', bus_id: '{i.bus_id}', "
                         f"code: {i.code}{where}}}\n")
    text = "".join(lines).encode()
    listed = [_listed(e) for e in events]
    body = {names.XID_COMPANION_LAST_SEQ: last_seq, names.XID_COMPANION_EVENTS: listed}
    return text, flatstate.render(names.XID_EVENTS_KIND, digest(text), body)


def _listed(e: Event) -> dict:
    """An event as the companion lists it; its instance ids only when it names them."""
    i = e.injection
    out = {names.XID_COMPANION_SEQ: e.seq, names.XID_COMPANION_GPU: i.gpu, names.XID_COMPANION_CODE: i.code}
    for key, value in ((names.XID_COMPANION_GI, i.gi), (names.XID_COMPANION_CI, i.ci),
                       (names.XID_COMPANION_TYPE, i.event_type)):
        if value is not None:
            out[key] = value
    return out


class Refused(ValueError):
    """An events document that is not one ``render`` would write: ignored whole, then
    replaced by its next writer. The reason names the field, never a value from the file."""


def _number(item: dict, key: str, lo: int, hi: int, where: str = "") -> int:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise Refused(f"{where}{key} is not an integer from {lo} to {hi}")
    return value


def parse(doc) -> tuple[list[Event], int]:
    """The events and last_seq of a document ``render`` wrote; Refused for anything else.

    Every count and number is held to the reader's bounds (names.MAX_XID_EVENTS,
    MAX_XID_SEQ, MAX_GPUS) before it is used, as the mock NVML holds the companion."""
    if not isinstance(doc, dict):
        raise Refused("not a mapping")
    last = _number(doc, "last_seq", 0, names.MAX_XID_SEQ)
    listed = doc.get("events")
    if listed is None:
        listed = []
    if not isinstance(listed, list):
        raise Refused("events is not a list")
    if len(listed) > names.MAX_XID_EVENTS:
        raise Refused(f"more than {names.MAX_XID_EVENTS} events")
    events = []
    for n, item in enumerate(listed):
        where = f"event {n}: "
        if not isinstance(item, dict):
            raise Refused(f"event {n} is not a mapping")
        uuid, bus_id = item.get("uuid"), item.get("bus_id")
        if not isinstance(uuid, str) or not isinstance(bus_id, str) or len(uuid) > 64 or len(bus_id) > 64:
            raise Refused(f"{where}uuid and bus_id are not strings of at most 64 characters")
        gi = _number(item, "gi", 0, names.MIG_GPU_INSTANCE_IDS - 1, where) if "gi" in item else None
        ci = _number(item, "ci", 0, names.MIG_COMPUTE_INSTANCE_IDS - 1, where) if "ci" in item else None
        if ci is not None and gi is None:
            raise Refused(f"{where}ci is given without gi")
        event_type = None
        if "type" in item:
            event_type = _number(item, "type", 1, 2, where)
        events.append(Event(_number(item, "seq", 1, last, where),
                            Injection(_number(item, "gpu", 0, names.MAX_GPUS - 1, where), uuid, bus_id,
                                      _number(item, "code", 0 if event_type else 1, 0xFFFFFFFF, where),
                                      gi, ci, event_type)))
    return events, last


def load(path: str) -> tuple[list[Event], int]:
    """The events document at ``path`` as ``parse`` takes it: ([], 0) when absent.

    Any workload can write it (driver/config is bound writable into containers): it
    is read without following a link or blocking on a FIFO, a regular file of at most
    names.MAX_EVENTS_COMPANION_BYTES. Refused says why it was not taken, the path
    not included (the caller names it)."""
    from mokka.core import fsutil, yamlio

    try:
        data = fsutil.read_bounded(path, names.MAX_EVENTS_COMPANION_BYTES, follow=False)
    except FileNotFoundError:
        return [], 0
    except fsutil.ReadRefused as exc:
        raise Refused(f"it {exc}") from None
    except OSError as exc:
        raise Refused(exc.strerror or type(exc).__name__) from None
    try:
        doc = yamlio.safe_load(data)
    except (yamlio.YAMLError, RecursionError):
        raise Refused("not valid YAML") from None
    return parse(doc)
