"""``mokka ctl ecc`` and ``ctl nvlink``: read what NVML reads now, write what
mokka.smi.errinject plans (the overrides, through mokka.engine.overrides) and raise its
events (through mokka.engine.xidlog, and the Xids' lines to the kernel log as ``ctl xid``)."""

from __future__ import annotations

import ctypes as C
import sys

from mokka.core import names

NVML_FEATURE_ENABLED = 1
VOLATILE, AGGREGATE = 0, 1
DBE_CAUSE = 1                        # NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
WHOLE_COUNTS = "nvmlMokkaReadWholeEccCounts"   # the counts before a clearing (mokka_private.h)


def _handle(lib, target):
    """The GPU's handle; a GPU NVML cannot open (lost: ctl set GPU lost=true) is one line."""
    from mokka.cmd.ctl import Fail, _named
    from mokka.engine import nvml
    try:
        return lib.handle(target.index)
    except nvml.NvmlError as exc:
        raise Fail(f"{_named(target)}: {exc}; nothing injected")


def _gpu(lib, target):
    from mokka.smi.gpu import Gpu
    return Gpu(lib, target.index, _handle(lib, target))


def ecc(lib, target, directory: str, opts) -> int:
    from mokka.cmd.ctl import Fail, _named
    from mokka.engine import overrides as ovr
    from mokka.smi import errinject as ei
    from mokka.smi.ctl import CtlError

    try:
        count = ei.parse_count(opts.count)
    except CtlError as exc:
        raise Fail(str(exc))
    gpu = _gpu(lib, target)
    current, _ = gpu.ecc_mode()
    if current != NVML_FEATURE_ENABLED:
        raise Fail(f"{_named(target)}: ECC is off, so it counts no ECC errors; turn it on first "
                   "(nvidia-smi -e 1, then nvidia-smi -r)")
    kind, (_, where) = opts.kind, ei.LOCATIONS[opts.location]
    shown = [gpu.ecc_total(ei.ERROR_TYPE[kind], scope) for scope in (VOLATILE, AGGREGATE)]
    lib.fn(WHOLE_COUNTS)(C.c_uint(1))       # what the counts hold: a clearing's mark stays where it is
    try:
        readings = _ecc_readings(gpu, target, kind, opts.location, where)
    finally:
        lib.fn(WHOLE_COUNTS)(C.c_uint(0))
    split = readings.pop()
    remapped = gpu.remapped_rows()
    cleared = tuple(whole - seen if isinstance(seen, int) else 0 for (whole, _), seen in zip(readings, shown))
    now = ei.EccNow(readings[0], readings[1], remapped,
                    None if remapped is not None else gpu.retired_pages(DBE_CAUSE), bool(split), cleared)
    plan = ei.ecc_plan(kind, opts.location, count, now)
    ovr.update(directory, target.physical, plan.lasting, lasting=True)
    ovr.update(directory, target.physical, plan.own)
    _raise(lib, target, plan.events, opts)
    print(f"{_named(target)}: {count} {kind.upper()} in {opts.location}: {'; '.join(plan.said)}")
    return 0


def _ecc_readings(gpu, target, kind: str, location: str, where) -> list:
    """(total, the location's count) of each scope, then the SRAM's split (or None)."""
    from mokka.cmd.ctl import Fail, _named
    from mokka.smi import errinject as ei

    readings = []
    split = location == "sram" and kind == "dbe" and gpu.sram_ecc()
    for scope in (VOLATILE, AGGREGATE):
        total = gpu.ecc_total(ei.ERROR_TYPE[kind], scope)
        here = gpu.ecc_counter(ei.ERROR_TYPE[kind], scope, where)
        if split:                            # SEC-DED's own count: the counter sums it with parity's
            here = split.volatileUncSecDed if scope == VOLATILE else split.aggregateUncSecDed
        if not isinstance(here, int) or not isinstance(total, int):
            raise Fail(f"--location {location}: {_named(target)} counts no ECC errors there; "
                       f"give another location (dram counts on every board with ECC)")
        readings.append((total, here))
    return readings + [split]


def _raise(lib, target, events: list, opts) -> None:
    """The plan's events, in order, in one write of the events document; each Xid's
    line to the kernel log, as ``ctl xid`` writes it."""
    from mokka.cmd.ctl import PROG, _bus_id, append_kmsg
    from mokka.core import xid
    from mokka.core.fsutil import dir_locked
    from mokka.engine import xidlog

    path = lib.node_path(names.NODE_PATH_XID_EVENTS)
    bus_id = _bus_id(lib, target)
    injections = [xid.Injection(target.physical, target.uuid, bus_id, code, event_type=event_type)
                  for event_type, code in events]

    def refused(exc: xid.Refused) -> None:
        print(f"{PROG}: {path}: not an events document Mokka wrote ({exc}): replacing it", file=sys.stderr)

    xidlog.record(path, xidlog.inject_all(injections), lock=dir_locked(path), refused=refused)
    for injection in injections:
        if injection.event_type is None:
            line = xid.kmsg_line(injection, opts.node_name)
            print(f"{PROG}: Xid {injection.code}: {append_kmsg(path, opts.kmsg_path, line)}", file=sys.stderr)


def nvlink(lib, target, directory: str, opts) -> int:
    from mokka.cmd.ctl import Fail, _named
    from mokka.engine import nvml
    from mokka.engine import overrides as ovr
    from mokka.smi import errinject as ei
    from mokka.smi.ctl import CtlError

    handle = _handle(lib, target)
    counters: list[list[int]] = []
    for link in range(names.MAX_NVLINK_LINKS):
        row = []
        for _, index in sorted(ei.LINK_ERRORS.values(), key=lambda x: x[1]):
            out = C.c_ulonglong(0)
            code = lib.ask("nvmlDeviceGetNvLinkErrorCounter", handle, C.c_uint(link), C.c_int(index),
                           C.byref(out))
            if code == nvml.NOT_SUPPORTED:
                raise Fail(f"{_named(target)} has no NVLink; inject NVLink errors on a GPU that has one")
            if code != nvml.SUCCESS:
                break
            row.append(out.value)
        if len(row) < len(ei.LINK_ERRORS):
            break
        counters.append(row)
    try:
        link = ei.parse_link(opts.link, len(counters))
        count = ei.parse_count(opts.count)
    except CtlError as exc:
        raise Fail(str(exc))
    plan = ei.nvlink_plan(link, opts.kind, count, counters)
    ovr.update(directory, target.physical, plan.own)
    print(f"{_named(target)}: {'; '.join(plan.said)}")
    return 0
