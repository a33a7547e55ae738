"""``mokka ctl ecc`` and ``ctl nvlink``: read what NVML reads now, write what
mokka.smi.errinject plans (the overrides, through mokka.engine.overrides) and raise its
events (ctl_events: the events document, and the Xids' lines to the kernel log as ``ctl xid``)."""

from __future__ import annotations

import ctypes as C

from mokka.core import names
from mokka.smi.ctl_events import raise_events
from mokka.smi.ctl_node import Fail, bus_id, handle, named

NVML_FEATURE_ENABLED = 1
VOLATILE, AGGREGATE = 0, 1
SBE_CAUSE, DBE_CAUSE = 0, 1          # NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, _DOUBLE_BIT_
WHOLE_COUNTS = "nvmlMokkaReadWholeErrorCounts"   # the counts before a clearing or reset (mokka_private.h)


def _gpu(lib, target):
    from mokka.smi.gpu import Gpu
    return Gpu(lib, target.index, handle(lib, target))


def ecc(lib, target, directory: str, opts) -> int:
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
        raise Fail(f"{named(target)}: ECC is off, so it counts no ECC errors; turn it on first "
                   "(nvidia-smi -e 1, then nvidia-smi -r)")
    kind, (_, where) = opts.kind, ei.LOCATIONS[opts.location]
    containment = _containment(gpu, target, kind, opts.containment)
    shown = [gpu.ecc_total(ei.ERROR_TYPE[kind], scope) for scope in (VOLATILE, AGGREGATE)]
    lib.fn(WHOLE_COUNTS)(C.c_uint(1))       # what the counts hold: a clearing's mark stays where it is
    try:
        readings = _ecc_readings(gpu, target, kind, opts.location, where)
    finally:
        lib.fn(WHOLE_COUNTS)(C.c_uint(0))
    split = readings.pop()
    remapped = gpu.remapped_rows()
    cleared = tuple(whole - seen if isinstance(seen, int) else 0 for (whole, _), seen in zip(readings, shown))
    retired = None if remapped is not None else gpu.retired_pages(DBE_CAUSE)
    other = len(gpu.retired_pages(SBE_CAUSE) or []) if retired is not None else 0
    now = ei.EccNow(readings[0], readings[1], remapped=remapped, retired=retired, retired_other=other,
                    sram_split=bool(split), cleared=cleared, containment=containment)
    plan = ei.ecc_plan(kind, opts.location, count, now)
    ovr.update(directory, target.physical, plan.lasting, lasting=True)
    ovr.update(directory, target.physical, plan.own)
    raise_events(lib, target, bus_id(lib, target), plan.events, opts.kmsg_path, opts.node_name)
    print(f"{named(target)}: {count} {kind.upper()} in {opts.location}: {'; '.join(plan.said)}")
    return 0


def _containment(gpu, target, kind: str, asked: str | None) -> str | None:
    """What the board's error containment makes of the error (errinject.EccNow.containment):
    what --containment asked, contained when it asked nothing; None on a board without it."""
    from mokka.smi import errinject as ei

    if asked is not None and kind != "dbe":
        raise Fail(f"--containment {asked}: a single-bit error is corrected, not contained; "
                   "give --containment with dbe only")
    pci = gpu.pci()
    if not ei.has_containment(gpu.architecture(), pci.pciDeviceId if pci is not None else None):
        if asked is not None:
            raise Fail(f"--containment {asked}: {named(target)} has no error containment (GA100, GH100 "
                       "and later boards have it), so a double-bit error raises Xid 48; leave it out")
        return None
    return (asked or "contained") if kind == "dbe" else None


def _ecc_readings(gpu, target, kind: str, location: str, where) -> list:
    """(total, the location's count) of each scope, then the SRAM's split (or None)."""
    from mokka.smi import errinject as ei

    readings = []
    split = location == "sram" and kind == "dbe" and gpu.sram_ecc()
    for scope in (VOLATILE, AGGREGATE):
        total = gpu.ecc_total(ei.ERROR_TYPE[kind], scope)
        here = gpu.ecc_counter(ei.ERROR_TYPE[kind], scope, where)
        if split:                            # SEC-DED's own count: the counter sums it with parity's
            here = split.volatileUncSecDed if scope == VOLATILE else split.aggregateUncSecDed
        if not isinstance(here, int) or not isinstance(total, int):
            raise Fail(f"--location {location}: {named(target)} counts no ECC errors there; "
                       f"give another location (dram counts on every board with ECC)")
        readings.append((total, here))
    return readings + [split]


def nvlink(lib, target, directory: str, opts) -> int:
    from mokka.engine import overrides as ovr
    from mokka.smi import errinject as ei
    from mokka.smi.ctl import CtlError

    gpu_handle = handle(lib, target)
    counters = _link_counters(lib, target, gpu_handle)
    lib.fn(WHOLE_COUNTS)(C.c_uint(1))       # what the counters hold: a link reset's mark stays where it is
    try:
        whole = _link_counters(lib, target, gpu_handle)
    finally:
        lib.fn(WHOLE_COUNTS)(C.c_uint(0))
    try:
        link = ei.parse_link(opts.link, len(counters))
        count = ei.parse_count(opts.count)
    except CtlError as exc:
        raise Fail(str(exc))
    index = ei.LINK_ERRORS[opts.kind][1]
    plan = ei.nvlink_plan(link, opts.kind, count, whole, reset=whole[link][index] - counters[link][index])
    ovr.update(directory, target.physical, plan.own)
    print(f"{named(target)}: {'; '.join(plan.said)}")
    return 0


def _link_counters(lib, target, gpu_handle) -> list[list[int]]:
    """Every link's five error counters (nvmlNvLinkErrorCounter_t order), item N for link N."""
    from mokka.engine import nvml
    from mokka.smi import errinject as ei

    counters: list[list[int]] = []
    for link in range(names.MAX_NVLINK_LINKS):
        row = []
        for _, index in sorted(ei.LINK_ERRORS.values(), key=lambda x: x[1]):
            out = C.c_ulonglong(0)
            code = lib.ask("nvmlDeviceGetNvLinkErrorCounter", gpu_handle, C.c_uint(link), C.c_int(index),
                           C.byref(out))
            if code == nvml.NOT_SUPPORTED:
                raise Fail(f"{named(target)} has no NVLink; inject NVLink errors on a GPU that has one")
            if code != nvml.SUCCESS:
                break
            row.append(out.value)
        if len(row) < len(ei.LINK_ERRORS):
            break
        counters.append(row)
    return counters
