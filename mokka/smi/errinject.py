"""What ``mokka ctl ecc`` and ``ctl nvlink`` change, as plain data.

Pure: from what NVML reads now (``EccNow``, ``LinkNow``) and what the user asked,
the override changes to write and the events to raise. Counts are absolute (what NVML
reads plus what is injected), held at 2**64 - 1 (NVML's unsigned long long), so two
injections add up and none wraps.

Where each count goes follows what a GPU reset does on the real driver (nvml.h,
nvmlEccCounterType_t: volatile counts are reset each time the driver loads, aggregate
counts persist), so the overrides the reset drops hold what it clears:

- the GPU's own document (``gpu<N>.yaml``): the volatile counts, the pending flags of
  row remapping and page retirement, the NVLink error counters;
- its lasting document (``lasting-gpu<N>.yaml``, names.overrides_lasting_file): the
  aggregate counts, the remapped rows or retired pages and the remapping failure flag,
  which the InfoROM keeps.
  They are written to the GPU's own document too, which is layered over the lasting
  one, so a count ``ctl set`` put there earlier cannot hide them.

A double-bit error is answered as NVIDIA's GPU Memory Error Management (A100 and H100)
describes it. A board with error containment (GA100, GH100 and later: ``has_containment``)
raises Xid 94 for a contained error, which ends only the applications that met it (the
usual case, so the default), or Xid 95 for an uncontained one, which needs a GPU reset; a
board without it raises Xid 48. In device memory, a board that remaps rows (Ampere on)
then marks one more uncorrectable row for remapping, pending until the GPU is reset, and
raises Xid 63 (the remapping recorded in the InfoROM); the frame buffer has spare rows for
at most REMAP_CAPACITY remappings, an uncorrectable remapping taking a correctable one's
row once none is left, so past that the remapping fails: ``failure_occurred`` is set for
good and Xid 64 raised. A board that retires pages (before Ampere) retires one more page
for a double-bit error, pending until the reset, and raises Xid 63. A single-bit error
remaps and retires nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mokka.smi.ctl import CtlError, ascii_int, shown

U64_MAX = 2**64 - 1
#: --count: at most this many errors per call.
MAX_COUNT = 1_000_000

#: nvmlEventType_t of each kind (nvmlEventTypeSingleBitEccError, ...DoubleBitEccError).
EVENT_TYPE = {"sbe": 0x1, "dbe": 0x2}
#: nvmlMemoryErrorType_t: corrected (single bit), uncorrected (double bit).
ERROR_TYPE = {"sbe": 0, "dbe": 1}
BITS = {"sbe": "single_bit", "dbe": "double_bit"}
#: --location -> (the state's count under ecc.errors.<scope>.<bits>, nvmlMemoryLocation_t).
LOCATIONS = {"dram": ("device_memory", 2), "l1": ("l1_cache", 0), "l2": ("l2_cache", 1),
             "register": ("register_file", 3), "texture": ("texture_memory", 4), "sram": ("sram", 7)}
#: The Xid of a double-bit error on a board without error containment; those of a contained and
#: an uncontained one on a board with it (--containment); those of a row remapping or page
#: retirement recorded, and of one that failed.
XID_DBE = 48
CONTAINMENT_XIDS = {"contained": 94, "uncontained": 95}
XID_RECORDED, XID_RECORD_FAILED = 63, 64
#: Rows of the frame buffer row remapping can replace, correctable and uncorrectable together
#: (NVIDIA's Row Remapping: "up to 512 remapping for the frame buffer").
REMAP_CAPACITY = 512
#: nvmlDeviceArchitecture_t of Ampere and Hopper, and the PCI device ids of the GA100 chip
#: (0x20xx): error containment is GA100's and GH100's, and later boards'.
ARCH_AMPERE, ARCH_HOPPER = 7, 9
GA100_DEVICE_IDS = range(0x2000, 0x2100)
#: The address a retired page of the n-th injected double-bit error gets (4 KiB pages).
RETIRED_PAGE_BASE, PAGE_SIZE = 0x100000, 0x1000
#: Pages of the frame buffer page retirement can retire, for either cause (NVIDIA's Row
#: Remapping: "a maximum of 64 retirements for the frame buffer" on boards before Ampere).
RETIRE_CAPACITY = 64

#: ctl nvlink's error kinds -> (the state's counter, nvmlNvLinkErrorCounter_t).
LINK_ERRORS = {"replay": ("replay", 0), "recovery": ("recovery", 1), "crc-flit": ("crc_flit", 2),
               "crc-data": ("crc_data", 3), "ecc-data": ("ecc_data", 4)}


def parse_count(text: str) -> int:
    value = ascii_int(text.strip())
    if value is None or not 1 <= value <= MAX_COUNT:
        raise CtlError(f"--count {shown(text)}: expected an integer from 1 to {MAX_COUNT}")
    return value


def _add(a: int, b: int) -> int:
    return min(U64_MAX, a + b)


def _nested(path: str, value) -> dict:
    out: dict = {}
    node = out
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return out


def _merge(into: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


@dataclass
class EccNow:
    """What NVML reads now of one GPU for one error kind. ``volatile``/``aggregate``:
    (total, the location's count); ``remapped``: nvmlDeviceGetRemappedRows' four values,
    None where the board remaps no rows; ``retired``: the pages retired for double-bit
    errors, None where the board retires none."""

    volatile: tuple[int, int]
    aggregate: tuple[int, int]
    remapped: tuple | None = None
    retired: list | None = None
    #: How many pages are retired for single-bit errors: they take from RETIRE_CAPACITY too.
    retired_other: int = 0
    #: The SRAM's uncorrectable errors split by protection (Ampere on: parity, SEC-DED), so a
    #: double-bit error there counts as SEC-DED; ``here`` is then that count.
    sram_split: bool = False
    #: (volatile, aggregate): how much less than the totals NVML's callers read, since
    #: nvmlDeviceClearEccErrorCounts (the counts above are the whole ones, which grow).
    cleared: tuple[int, int] = (0, 0)
    #: What the board's error containment made of a double-bit error: "contained" or
    #: "uncontained" (CONTAINMENT_XIDS); None on a board without it (Xid 48).
    containment: str | None = None


def has_containment(architecture: int | None, pci_device_id: int | None) -> bool:
    """Whether a board contains uncorrectable errors (NVIDIA's GPU Memory Error Management,
    Supported GPUs: GA100 and GH100; Blackwell's documents list it too). ``pci_device_id``:
    nvmlPciInfo_t.pciDeviceId, the device in its upper 16 bits."""
    if architecture is None:
        return False
    if architecture >= ARCH_HOPPER:
        return True
    return architecture == ARCH_AMPERE and pci_device_id is not None and (pci_device_id >> 16) in GA100_DEVICE_IDS


def _location_key(kind: str, location: str, scope: str, split: bool) -> str:
    """The state's count of ``location``: ecc.errors.<scope>.<bits>.<location>, or the
    SRAM's ecc.sram.<scope>.<count>."""
    if location != "sram":
        return f"ecc.errors.{scope}.{BITS[kind]}.{LOCATIONS[location][0]}"
    count = "correctable" if kind == "sbe" else "uncorrectable_secded" if split else "uncorrectable"
    return f"ecc.sram.{scope}.{count}"


@dataclass
class Plan:
    own: dict = field(default_factory=dict)        # the GPU's own document: what a reset drops
    lasting: dict = field(default_factory=dict)    # what a reset keeps
    events: list = field(default_factory=list)     # (NVML event type or None, Xid code)
    said: list = field(default_factory=list)       # what changed, for the one line ctl prints


def ecc_plan(kind: str, location: str, count: int, now: EccNow) -> Plan:
    plan = Plan()
    bits = BITS[kind]
    for scope, (total, here), cleared in (("volatile", now.volatile, now.cleared[0]),
                                          ("aggregate", now.aggregate, now.cleared[1])):
        change = _merge(_nested(f"ecc.errors.{scope}.{bits}.total", _add(total, count)),
                        _nested(_location_key(kind, location, scope, now.sram_split), _add(here, count)))
        _merge(plan.own, change)
        if scope == "aggregate":
            _merge(plan.lasting, _nested(f"ecc.errors.{scope}.{bits}.total", _add(total, count)))
            _merge(plan.lasting, _nested(_location_key(kind, location, scope, now.sram_split), _add(here, count)))
        plan.said.append(f"{scope} {kind.upper()} {_add(total, count) - cleared}")
    plan.events.append((EVENT_TYPE[kind], 0))
    if kind != "dbe":
        return plan
    plan.events.append((None, CONTAINMENT_XIDS[now.containment] if now.containment else XID_DBE))
    if location != "dram":
        return plan
    if now.remapped is not None:
        _remap(plan, count, now.remapped)
    elif now.retired is not None:
        _retire(plan, count, list(now.retired), now.retired_other)
    return plan


def _retire(plan: Plan, count: int, pages: list, other: int) -> None:
    """One more page retired for a double-bit error per error while the frame buffer may
    retire one; the rest fail."""
    done = min(count, max(0, RETIRE_CAPACITY - len(pages) - other))
    top = max(pages, default=RETIRED_PAGE_BASE - PAGE_SIZE)
    pages += [min(U64_MAX, top + PAGE_SIZE * (n + 1)) for n in range(done)]
    if done:
        retired = {"count": len(pages), "addresses": pages}
        _merge(plan.lasting, {"retired_pages": {"double_bit_retirement": retired}})
        _merge(plan.own, {"retired_pages": {"double_bit_retirement": dict(retired),
                                             "pending_retirement": True}})
        plan.events.append((None, XID_RECORDED))
        plan.said.append(f"retired pages (double bit) {len(pages)}, pending until a reset")
    if done < count:
        plan.events.append((None, XID_RECORD_FAILED))
        plan.said.append(f"page retirement failed for {count - done} (no page left to retire: "
                         f"{RETIRE_CAPACITY} pages retired)")


def _remap(plan: Plan, count: int, remapped: tuple) -> None:
    """One more uncorrectable remapped row per error while the frame buffer has a spare row
    (one a correctable remapping holds counts as spare); the rest fail."""
    corr, unc = remapped[0], remapped[1]
    done = min(count, max(0, REMAP_CAPACITY - unc))
    rows = {"uncorrectable": unc + done}
    if done and corr + unc + done > REMAP_CAPACITY:
        rows["correctable"] = max(0, REMAP_CAPACITY - unc - done)
    if done < count:
        rows["failure_occurred"] = True
    _merge(plan.lasting, {"remapped_rows": dict(rows)})
    if done:
        rows["pending"] = True
    _merge(plan.own, {"remapped_rows": rows})
    if done:
        plan.events.append((None, XID_RECORDED))
        plan.said.append(f"remapped rows (uncorrectable) {rows['uncorrectable']}, pending until a reset")
    if done < count:
        plan.events.append((None, XID_RECORD_FAILED))
        plan.said.append(f"row remapping failed for {count - done} (no spare row left: "
                         f"{REMAP_CAPACITY} rows remapped), failure recorded")


def nvlink_plan(link: int, kind: str, count: int, counters: list[list[int]], reset: int = 0) -> Plan:
    """``counters``: every link's five counters as the layers hold them now (whole, before
    any nvmlDeviceResetNvLinkErrorCounters), item N for link N (the list the GPU's own
    document holds whole: a list's layer owns every item); ``reset``: how much less than the
    injected counter NVML's callers read since the link was reset."""
    name, index = LINK_ERRORS[kind]
    rows = [list(c) for c in counters]
    rows[link][index] = _add(rows[link][index], count)
    keys = [n for n, _ in sorted(LINK_ERRORS.values(), key=lambda x: x[1])]
    listed = [dict(zip(keys, row)) for row in rows]
    plan = Plan(own={"nvlink_errors": listed})
    plan.said.append(f"NVLink {link} {kind} errors {rows[link][index] - reset}")
    return plan


def parse_link(text: str, links: int) -> int:
    value = ascii_int(text.strip())
    if value is None or not 0 <= value < links:
        raise CtlError(f"{shown(text)}: not an NVLink of this GPU; expected a link from 0 to {links - 1}")
    return value
