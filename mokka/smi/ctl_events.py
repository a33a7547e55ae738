"""What ``mokka ctl`` raises: NVML events in the node's events document (through
mokka.engine.xidlog, as the agent's kernellog does) and, for each Xid, the driver's
line in the node's kernel log, as kernellog announces one."""

from __future__ import annotations

import json
import os
import sys

from mokka.core import names

PROG = "ctl"
ENV_KMSG_PATH = "MOKKA_CTL_KMSG_PATH"


def _refused(path: str):
    from mokka.core import xid

    def refused(exc: xid.Refused) -> None:           # rewritten whole, numbered from 1
        print(f"{PROG}: {path}: not an events document Mokka wrote ({exc}): replacing it", file=sys.stderr)
    return refused


def raise_xid(path: str, target, bus_id: str, code: int, kmsg_path: str, node_name: str) -> int:
    """Add the event to xid-events.yaml and its companion, then write the driver's line to
    the kernel log; print the event as JSON and where the line went."""
    from mokka.core import xid
    from mokka.core.fsutil import dir_locked
    from mokka.engine import xidlog

    injection = xid.Injection(target.physical, target.uuid, bus_id, code, target.gi, target.ci)
    [event], _ = xidlog.record(path, xidlog.inject(injection), lock=dir_locked(path), refused=_refused(path))
    line = xid.kmsg_line(injection, node_name)
    instance = {"gi": target.gi, "ci": target.ci} if target.gi is not None else {}
    print(json.dumps({"seq": event.seq, "gpu": target.index, "uuid": injection.uuid, **instance,
                      "code": code, "kmsg": line}))
    print(f"{PROG}: Xid {code}: {append_kmsg(path, kmsg_path, line)}", file=sys.stderr)
    return 0


def raise_events(lib, target, bus_id: str, events: list, kmsg_path: str | None, node_name: str) -> None:
    """``events`` ((NVML event type or None for an Xid, Xid code)), in order, in one write
    of the events document; each Xid's line to the kernel log, as ``ctl xid`` writes it."""
    from mokka.core import xid
    from mokka.core.fsutil import dir_locked
    from mokka.engine import xidlog

    path = lib.node_path(names.NODE_PATH_XID_EVENTS)
    injections = [xid.Injection(target.physical, target.uuid, bus_id, code, event_type=event_type)
                  for event_type, code in events]
    xidlog.record(path, xidlog.inject_all(injections), lock=dir_locked(path), refused=_refused(path))
    for injection in injections:
        if injection.event_type is None:
            line = xid.kmsg_line(injection, node_name)
            print(f"{PROG}: Xid {injection.code}: {append_kmsg(path, kmsg_path, line)}", file=sys.stderr)


def append_kmsg(events_path: str, named: str | None, line: str) -> str:
    """Append the driver's line to the kernel log ``kmsg.target`` allows (``named``: the
    one the user named, or None) for the node whose events file this is; the one line
    saying where it went or why it did not."""
    from mokka.core import fsutil, kmsg, xid

    try:
        record = kmsg.parse_record(fsutil.read_bounded(kmsg.record_path(events_path), kmsg.RECORD_LIMIT,
                                                       follow=False))
    except (OSError, fsutil.ReadRefused):
        record = None
    target = kmsg.target(named, record, events_path)
    if target.path is None:
        return f"reached the mock NVML only: {target.why}"
    try:
        # never created; O_NONBLOCK: a FIFO with no reader there fails at once, never hangs
        fd = os.open(target.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        return (f"reached the mock NVML only: cannot open the kernel log {target.path} "
                f"({target.why}): {exc.strerror}; name another with --kmsg-path or {ENV_KMSG_PATH}")
    try:
        os.write(fd, (xid.KMSG_PRIORITY + line + "\n").encode())     # one record per write
    finally:
        os.close(fd)
    return f"kernel log line written to {target.path} ({target.why})"
