"""What each answer of test_dcgm_coverage.py's DCGM calls must carry on the two staged boards:
an h100 with MIG on (seven 1g.10gb instances, GPU 0's first MIG device where a call takes one)
and an a100 with MIG off. Literals come from the boards' profiles (mokka/core/profiles/) and
from NVML's semantics in nvml.h; a moving reading is checked against the range the board allows.

    VALUES   function -> board -> (what, check) for a SUCCESS answer. check gets the call's
             buffers, each {"u32", "u64", "u32s" (its first 128 words), "str"}: the probe's "out"
             (its pointer arguments in order), then for a setter the read-back of its getter
             (probe_dcgm.READ_BACK).
    CODES    function -> board -> (code, why) for an answer that is neither SUCCESS nor
             NOT_SUPPORTED: the code the real driver answers for the probe's arguments.
    RC_ONLY  function -> why its SUCCESS carries nothing but the code.
    WRONG    (function, board) -> where the mock answers a wrong value (a strict xfail).

This module holds the device readings; dcgm_values_mig.py the MIG and GPM calls;
dcgm_values_setters.py the setters, RC_ONLY and the other codes. Any further dcgm_values*.py
module next to them may add its own tables: registries() merges them all.
"""

from __future__ import annotations

import glob
import importlib
import os

BOARDS = ("h100", "a100")
MIB, GIB = 1 << 20, 1 << 30
SUCCESS, INVALID_ARGUMENT, NOT_FOUND, TIMEOUT, INSUFFICIENT_RESOURCES = 0, 2, 6, 10, 23
NVML_PSTATE_UNKNOWN = 32


def word(o, i: int = 0, at: int = 0) -> int:
    return o[i]["u32s"][at]


def u64(o, i: int = 0, at: int = 0) -> int:
    return o[i]["u32s"][at] | o[i]["u32s"][at + 1] << 32


def signed(x: int) -> int:
    return x - (1 << 32) if x >= 1 << 31 else x


def text(o, i: int = 0, at: int = 0) -> str:
    raw = b"".join(w.to_bytes(4, "little") for w in o[i]["u32s"][at:])
    return raw.split(b"\0")[0].decode("ascii", "replace")


def zeros(o, i: int = 0, words: int = 16) -> bool:
    return not any(o[i]["u32s"][:words])


def both(*entry) -> dict:
    """The same entry, (what, check) or (code, why), on both boards."""
    return {b: entry for b in BOARDS}


def per(h100: tuple, a100: tuple) -> dict:
    return {"h100": h100, "a100": a100}


def fields(o) -> list[tuple[int, int, int, int]]:
    """nvmlDeviceGetFieldValues' answers (probe_dcgm.FIELDS): (field id, type, return, value)."""
    return [(word(o, 0, 10 * k), word(o, 0, 10 * k + 6), word(o, 0, 10 * k + 7), u64(o, 0, 10 * k + 8))
            for k in range(8)]


def _fields(energy: int, links: int, draw: int):
    # ECC current/pending on (unsigned int), DBE volatile 0 (unsigned long long), memory
    # temperature (moving: under the 87 C slowdown), energy (only grows), links, PCIe replays, draw.
    def check(o):
        got = fields(o)
        ids, types, rcs = [f[0] for f in got], [f[1] for f in got], [f[2] for f in got]
        values = [f[3] for f in got]
        return (ids == [1, 2, 4, 82, 83, 91, 94, 186] and rcs == [SUCCESS] * 8 and types == [1, 1, 3, 1, 3, 1, 1, 1]
                and values[:3] == [1, 1, 0] and 0 < values[3] < 87 and values[4] >= energy
                and values[5] == links and values[6] == 0 and 0 < values[7] <= draw)
    return check


def _samples(limit_mw: int):
    # NVML_TOTAL_POWER_SAMPLES: unsigned int values (type 1), each a draw the board allows, in time order.
    def check(o):
        n = word(o, 1)
        shown = min(n, 32)
        stamps = [u64(o, 2, 4 * k) for k in range(shown)]
        draws = [word(o, 2, 4 * k + 2) for k in range(shown)]
        return (word(o, 0) == 1 and 0 < n <= 1024 and stamps == sorted(stamps) and stamps[0] > 0
                and all(0 < d <= limit_mw for d in draws))
    return check


def _pci(bus_id: str, bus: int, device_id: int, subsystem_id: int):
    # nvmlPciInfo_t: the legacy bus id (4-digit domain), domain, bus, device, device id, subsystem
    # id, then the bus id with its 8-digit domain.
    return (bus_id, lambda o: (text(o) == bus_id and o[0]["u32s"][4:9] == [0, bus, 0, device_id, subsystem_id]
                               and text(o, 0, 9) == "0000" + bus_id))


def _remote_switch(bdf: str, bus: int):
    return (f"NVSwitch {bdf}", lambda o: text(o) == bdf and word(o, 0, 5) == bus and text(o, 0, 9) == "0000" + bdf)


def handle(o, i: int = 0) -> bool:
    return u64(o, i) != 0


def _no_processes(o) -> bool:
    return word(o, 0) == 0 and zeros(o, 1)


VALUES = {
    # --- identity ---------------------------------------------------------------------------
    "nvmlDeviceGetName": per(("name", lambda o: o[0]["str"] == "NVIDIA H100 80GB HBM3"),
                             ("name", lambda o: o[0]["str"] == "NVIDIA A100-SXM4-40GB")),
    "nvmlDeviceGetCount_v2": both("8 GPUs", lambda o: word(o) == 8),
    "nvmlDeviceGetHandleByIndex_v2": both("a handle", handle),
    "nvmlDeviceGetIndex": both("index 0", lambda o: word(o) == 0),
    "nvmlDeviceGetUUID": per(("GPU 0's UUID", lambda o: o[0]["str"] == "GPU-01000100-0000-0000-0000-000000000000"),
                             ("GPU 0's UUID", lambda o: o[0]["str"] == "GPU-12345678-1234-1234-1234-123456780000")),
    "nvmlSystemGetDriverVersion": both("550.163.01", lambda o: o[0]["str"] == "550.163.01"),
    "nvmlDeviceGetMinorNumber": both("minor 0", lambda o: word(o) == 0),
    "nvmlDeviceGetSerial": per(("serial", lambda o: o[0]["str"] == "1562821083900"),
                               ("serial", lambda o: o[0]["str"] == "1324821083800")),
    "nvmlDeviceGetBoardPartNumber": per(("part", lambda o: o[0]["str"] == "699-2G520-0200-000"),
                                        ("part", lambda o: o[0]["str"] == "692-2G506-0200-002")),
    "nvmlDeviceGetVbiosVersion": per(("96.00.74.00.09", lambda o: o[0]["str"] == "96.00.74.00.09"),
                                     ("92.00.45.00.03", lambda o: o[0]["str"] == "92.00.45.00.03")),
    "nvmlDeviceGetInforomImageVersion": per(("G520.0200.00.05", lambda o: o[0]["str"] == "G520.0200.00.05"),
                                            ("G506.0200.00.04", lambda o: o[0]["str"] == "G506.0200.00.04")),
    "nvmlDeviceGetInforomVersion": per(("OEM object 2.1", lambda o: o[0]["str"] == "2.1"),
                                       ("OEM object 2.0", lambda o: o[0]["str"] == "2.0")),
    "nvmlDeviceGetInforomConfigurationChecksum": per(
        ("CRC-32 of the InfoROM objects", lambda o: word(o) == 3942094224),
        ("CRC-32 of the InfoROM objects", lambda o: word(o) == 1901255167)),
    "nvmlDeviceGetArchitecture": per(("Hopper (9)", lambda o: word(o) == 9), ("Ampere (7)", lambda o: word(o) == 7)),
    "nvmlDeviceGetBrand": both("NVIDIA (14)", lambda o: word(o) == 14),
    "nvmlDeviceGetCudaComputeCapability": per(("9.0", lambda o: (word(o), word(o, 1)) == (9, 0)),
                                              ("8.0", lambda o: (word(o), word(o, 1)) == (8, 0))),
    "nvmlDeviceGetNumGpuCores": per(("16896 cores", lambda o: word(o) == 16896),
                                    ("6912 cores", lambda o: word(o) == 6912)),
    "nvmlDeviceGetBoardId": per(("bus 0x1A's board", lambda o: word(o) == 0x1A00),
                                ("bus 0x07's board", lambda o: word(o) == 0x0700)),
    "nvmlDeviceGetMultiGpuBoard": both("a single-GPU board", lambda o: word(o) == 0),
    "nvmlDeviceGetIrqNum": both("GPU 0's interrupt, 300", lambda o: word(o) == 300),
    "nvmlDeviceGetGspFirmwareMode": both("GSP on, on by default", lambda o: (word(o), word(o, 1)) == (1, 1)),
    "nvmlDeviceGetGspFirmwareVersion": both("550.163.01", lambda o: o[0]["str"] == "550.163.01"),
    "nvmlDeviceGetDisplayMode": both("no display", lambda o: word(o) == 0),
    "nvmlDeviceGetDisplayActive": both("no display", lambda o: word(o) == 0),
    "nvmlDeviceGetNumFans": both("no fan of its own", lambda o: word(o) == 0),
    "nvmlGetExcludedDeviceCount": both("none excluded", lambda o: word(o) == 0),
    "nvmlDeviceGetGpuOperationMode": both("ALL_ON, ALL_ON", lambda o: (word(o), word(o, 1)) == (0, 0)),
    "nvmlDeviceGetAdaptiveClockInfoStatus": both("enabled (1)", lambda o: word(o) == 1),
    "nvmlDeviceGetPowerSource": both("AC (0)", lambda o: word(o) == 0),
    "nvmlDeviceGetSupportedEventTypes": both("ECC, P-state, Xid, clock and MIG change events (0x11F)",
                                             lambda o: u64(o) == 0x11F),
    # --- memory -------------------------------------------------------------------------------
    "nvmlDeviceGetMemoryInfo": per(
        ("80 GiB, 1 GiB held back", lambda o: (u64(o), u64(o, 0, 2), u64(o, 0, 4)) == (80 * GIB, 84825604096, GIB)),
        ("40 GiB, 583 MiB held back", lambda o: (u64(o), u64(o, 0, 4)) == (40 * GIB, 583 * MIB)
         and u64(o, 0, 2) == 40 * GIB - 583 * MIB)),
    "nvmlDeviceGetMemoryInfo_v2": per(
        ("80 GiB, 1 GiB reserved, none used", lambda o: [u64(o, 0, k) for k in (2, 4, 6, 8)]
         == [80 * GIB, GIB, 84825604096, 0]),
        ("40 GiB, 583 MiB reserved, none used", lambda o: [u64(o, 0, k) for k in (2, 4, 6, 8)]
         == [40 * GIB, 583 * MIB, 40 * GIB - 583 * MIB, 0])),
    "nvmlDeviceGetBAR1MemoryInfo": per(
        ("128 GiB BAR1, all free", lambda o: [u64(o, 0, k) for k in (0, 2, 4)] == [128 * GIB, 128 * GIB, 0]),
        ("64 GiB BAR1, all free", lambda o: [u64(o, 0, k) for k in (0, 2, 4)] == [64 * GIB, 64 * GIB, 0])),
    "nvmlDeviceGetMemoryBusWidth": both("5120 bits", lambda o: word(o) == 5120),
    # --- PCIe and affinity ----------------------------------------------------------------------
    "nvmlDeviceGetPciInfo": per(_pci("0000:1A:00.0", 0x1A, 0x233010DE, 0x165810DE),
                                _pci("0000:07:00.0", 0x07, 0x20B010DE, 0x134F10DE)),
    "nvmlDeviceGetPciInfo_v2": per(_pci("0000:1A:00.0", 0x1A, 0x233010DE, 0x165810DE),
                                   _pci("0000:07:00.0", 0x07, 0x20B010DE, 0x134F10DE)),
    "nvmlDeviceGetPciInfo_v3": per(_pci("0000:1A:00.0", 0x1A, 0x233010DE, 0x165810DE),
                                   _pci("0000:07:00.0", 0x07, 0x20B010DE, 0x134F10DE)),
    "nvmlDeviceGetBusType": both("PCIe (2)", lambda o: word(o) == 2),
    "nvmlDeviceGetMaxPcieLinkGeneration": per(("gen 5", lambda o: word(o) == 5), ("gen 4", lambda o: word(o) == 4)),
    "nvmlDeviceGetCurrPcieLinkGeneration": per(("gen 5", lambda o: word(o) == 5), ("gen 4", lambda o: word(o) == 4)),
    "nvmlDeviceGetMaxPcieLinkWidth": both("x16", lambda o: word(o) == 16),
    "nvmlDeviceGetCurrPcieLinkWidth": both("x16", lambda o: word(o) == 16),
    "nvmlDeviceGetPcieLinkMaxSpeed": per(("32000 MBPS (5)", lambda o: word(o) == 5),
                                         ("16000 MBPS (4)", lambda o: word(o) == 4)),
    "nvmlDeviceGetPcieSpeed": per(("32000 MBPS a lane", lambda o: word(o) == 32000),
                                  ("16000 MBPS a lane", lambda o: word(o) == 16000)),
    "nvmlDeviceGetPcieReplayCounter": both("no replays", lambda o: word(o) == 0),
    "nvmlDeviceGetPcieThroughput": both("an idle link sends nothing", lambda o: word(o) == 0),
    "nvmlDeviceGetCpuAffinity": per(("CPUs 0-55", lambda o: o[0]["u32s"][:3] == [0xFFFFFFFF, 0xFFFFFF, 0]),
                                    ("CPUs 0-63", lambda o: o[0]["u32s"][:3] == [0xFFFFFFFF, 0xFFFFFFFF, 0])),
    "nvmlDeviceGetCpuAffinityWithinScope": per(
        ("CPUs 0-55", lambda o: o[0]["u32s"][:3] == [0xFFFFFFFF, 0xFFFFFF, 0]),
        ("CPUs 0-63", lambda o: o[0]["u32s"][:3] == [0xFFFFFFFF, 0xFFFFFFFF, 0])),
    "nvmlDeviceGetMemoryAffinity": both("NUMA node 0", lambda o: u64(o) == 1),
    "nvmlDeviceGetTopologyCommonAncestor": both("a GPU with itself: INTERNAL (0)", lambda o: word(o) == 0),
    "nvmlDeviceGetP2PStatus": both("OK (0)", lambda o: word(o) == 0),
    # --- power --------------------------------------------------------------------------------
    "nvmlDeviceGetPowerManagementLimitConstraints": per(
        ("200-700 W", lambda o: (word(o), word(o, 1)) == (200000, 700000)),
        ("100-400 W", lambda o: (word(o), word(o, 1)) == (100000, 400000))),
    "nvmlDeviceGetPowerManagementLimit": per(("700 W", lambda o: word(o) == 700000),
                                             ("400 W", lambda o: word(o) == 400000)),
    "nvmlDeviceGetPowerManagementDefaultLimit": per(("700 W", lambda o: word(o) == 700000),
                                                    ("400 W", lambda o: word(o) == 400000)),
    "nvmlDeviceGetEnforcedPowerLimit": per(("700 W", lambda o: word(o) == 700000),
                                           ("400 W", lambda o: word(o) == 400000)),
    "nvmlDeviceGetPowerManagementMode": both("enabled", lambda o: word(o) == 1),
    "nvmlDeviceGetPowerUsage": per(("a draw up to 700 W", lambda o: 0 < word(o) <= 700000),
                                   ("a draw up to 400 W", lambda o: 0 < word(o) <= 400000)),
    "nvmlDeviceGetTotalEnergyConsumption": per(("at least 600 J", lambda o: u64(o) >= 600000),
                                               ("at least 500 J", lambda o: u64(o) >= 500000)),
    "nvmlDeviceGetPowerState": both("P0", lambda o: word(o) == 0),
    "nvmlDeviceGetPerformanceState": both("P0", lambda o: word(o) == 0),
    "nvmlDeviceGetSupportedPerformanceStates": both(
        "P0 only", lambda o: word(o) == 0 and o[0]["u32s"][1:16] == [NVML_PSTATE_UNKNOWN] * 15),
    "nvmlDeviceGetSamples": per(("power samples up to 700 W", _samples(700000)),
                                ("power samples up to 400 W", _samples(400000))),
    "nvmlDeviceGetViolationStatus": both("a reference time, no time under the power cap",
                                         lambda o: u64(o) > 0 and u64(o, 0, 2) == 0),
    # --- thermal ------------------------------------------------------------------------------
    "nvmlDeviceGetTemperature": both("under the 87 C slowdown", lambda o: 0 < word(o) < 87),
    "nvmlDeviceGetTemperatureThreshold": both("shutdown at 92 C", lambda o: word(o) == 92),
    "nvmlDeviceGetThermalSettings": both(
        "one GPU-internal sensor, 0-92 C, under 87 C now",
        lambda o: o[0]["u32s"][:4] == [1, 1, 0, 92] and 0 < word(o, 0, 4) < 87 and word(o, 0, 5) == 1),
    # --- clocks -------------------------------------------------------------------------------
    "nvmlDeviceGetClock": per(("345-1980 MHz", lambda o: 345 <= word(o) <= 1980),
                              ("210-1410 MHz", lambda o: 210 <= word(o) <= 1410)),
    "nvmlDeviceGetClockInfo": per(("345-1980 MHz", lambda o: 345 <= word(o) <= 1980),
                                  ("210-1410 MHz", lambda o: 210 <= word(o) <= 1410)),
    "nvmlDeviceGetMaxClockInfo": per(("1980 MHz", lambda o: word(o) == 1980), ("1410 MHz", lambda o: word(o) == 1410)),
    "nvmlDeviceGetMaxCustomerBoostClock": per(("1980 MHz", lambda o: word(o) == 1980),
                                              ("1410 MHz", lambda o: word(o) == 1410)),
    "nvmlDeviceGetApplicationsClock": per(("1980 MHz", lambda o: word(o) == 1980),
                                          ("1095 MHz", lambda o: word(o) == 1095)),
    "nvmlDeviceGetDefaultApplicationsClock": per(("1980 MHz", lambda o: word(o) == 1980),
                                                 ("1095 MHz", lambda o: word(o) == 1095)),
    "nvmlDeviceGetMinMaxClockOfPState": per(("P0: 345-1980 MHz", lambda o: (word(o), word(o, 1)) == (345, 1980)),
                                            ("P0: 210-1410 MHz", lambda o: (word(o), word(o, 1)) == (210, 1410))),
    "nvmlDeviceGetSupportedGraphicsClocks": per(
        ("1980 MHz down by 15", lambda o: o[0]["u32s"][:16] == list(range(1980, 1740, -15))),
        ("1410 MHz down by 15", lambda o: o[0]["u32s"][:16] == list(range(1410, 1170, -15)))),
    "nvmlDeviceGetSupportedMemoryClocks": per(("one, 2619 MHz", lambda o: (word(o), word(o, 1)) == (1, 2619)),
                                              ("one, 1215 MHz", lambda o: (word(o), word(o, 1)) == (1, 1215))),
    "nvmlDeviceGetCurrentClocksEventReasons": both("GPU idle (0x1)", lambda o: u64(o) == 0x1),
    "nvmlDeviceGetCurrentClocksThrottleReasons": both("GPU idle (0x1)", lambda o: u64(o) == 0x1),
    "nvmlDeviceGetSupportedClocksEventReasons": both("every reason through display clocks (0x1FF)",
                                                     lambda o: u64(o) == 0x1FF),
    "nvmlDeviceGetSupportedClocksThrottleReasons": both("every reason through display clocks (0x1FF)",
                                                        lambda o: u64(o) == 0x1FF),
    "nvmlDeviceGetGpcClkVfOffset": both("no offset", lambda o: word(o) == 0),
    "nvmlDeviceGetMemClkVfOffset": both("no offset", lambda o: word(o) == 0),
    "nvmlDeviceGetGpcClkMinMaxVfOffset": both("-1000..1000 MHz",
                                              lambda o: (signed(word(o)), signed(word(o, 1))) == (-1000, 1000)),
    "nvmlDeviceGetMemClkMinMaxVfOffset": both("-1000..1000 MHz",
                                              lambda o: (signed(word(o)), signed(word(o, 1))) == (-1000, 1000)),
    # --- modes --------------------------------------------------------------------------------
    "nvmlDeviceGetEccMode": both("on, on", lambda o: (word(o), word(o, 1)) == (1, 1)),
    "nvmlDeviceGetDefaultEccMode": both("on", lambda o: word(o) == 1),
    "nvmlDeviceGetComputeMode": both("Default", lambda o: word(o) == 0),
    "nvmlDeviceGetPersistenceMode": both("on", lambda o: word(o) == 1),
    "nvmlDeviceGetAccountingMode": both("off", lambda o: word(o) == 0),
    "nvmlDeviceGetAccountingBufferSize": both("4000 records", lambda o: word(o) == 4000),
    "nvmlDeviceGetAccountingPids": both("none", _no_processes),
    "nvmlDeviceGetAPIRestriction": both("application clocks: root only", lambda o: word(o) == 1),
    # --- ECC and memory health (0 on a fresh node) ---------------------------------------------
    "nvmlDeviceGetTotalEccErrors": both("0 corrected", lambda o: u64(o) == 0),
    "nvmlDeviceGetMemoryErrorCounter": both("0 in L1", lambda o: u64(o) == 0),
    "nvmlDeviceGetDetailedEccErrors": both("0 in L1, L2, device memory, register file", lambda o: zeros(o, 0, 8)),
    "nvmlDeviceGetSramEccErrorStatus": both("version 1 (104 bytes), every count 0, no threshold exceeded",
                                            lambda o: word(o) == 0x01000068 and not any(o[0]["u32s"][1:26])),
    "nvmlDeviceGetRemappedRows": both("none remapped, none pending, no failure",
                                      lambda o: [word(o, i) for i in range(4)] == [0, 0, 0, 0]),
    "nvmlDeviceGetRowRemapperHistogram": per(
        ("1280 banks keep every spare row", lambda o: o[0]["u32s"][:5] == [1280, 0, 0, 0, 0]),
        ("640 banks keep every spare row", lambda o: o[0]["u32s"][:5] == [640, 0, 0, 0, 0])),
    "nvmlDeviceGetFieldValues": per(("ECC on, 0 DBE, memory temperature, energy, 18 links, 0 replays, a draw",
                                     _fields(600000, 18, 700000)),
                                    ("ECC on, 0 DBE, memory temperature, energy, 12 links, 0 replays, a draw",
                                     _fields(500000, 12, 400000))),
    # --- processes, sessions and utilization (nothing runs) ------------------------------------
    **{f"nvmlDevice{kind}RunningProcesses{v}": both("none", _no_processes)
       for kind in ("GetCompute", "GetGraphics", "GetMPSCompute") for v in ("", "_v2", "_v3")},
    "nvmlDeviceGetEncoderSessions": both("none", _no_processes),
    "nvmlDeviceGetFBCSessions": both("none", _no_processes),
    "nvmlDeviceGetEncoderStats": both("no session, 0 fps, 0 us", lambda o: [word(o, i) for i in range(3)] == [0, 0, 0]),
    "nvmlDeviceGetFBCStats": both("no session, 0 fps, 0 us", lambda o: o[0]["u32s"][:3] == [0, 0, 0]),
    "nvmlDeviceGetUtilizationRates": {"a100": ("GPU 10-45 %, memory 5-25 %",
                                               lambda o: 10 <= word(o) <= 45 and 5 <= word(o, 0, 1) <= 25)},
    "nvmlDeviceGetEncoderUtilization": {"a100": ("idle, over a sampling period",
                                                 lambda o: word(o) == 0 and word(o, 1) > 0)},
    "nvmlDeviceGetDecoderUtilization": {"a100": ("idle, over a sampling period",
                                                 lambda o: word(o) == 0 and word(o, 1) > 0)},
    "nvmlDeviceGetDynamicPstatesInfo": {"a100": (
        "GPU 10-45 %, frame buffer 5-25 %, video and bus idle; all four present",
        lambda o: [word(o, 0, 1 + 4 * d) for d in range(4)] == [1, 1, 1, 1]
        and 10 <= word(o, 0, 2) <= 45 and 5 <= word(o, 0, 6) <= 25 and (word(o, 0, 10), word(o, 0, 14)) == (0, 0))},
    # --- NVLink (link 0, to an NVSwitch) -------------------------------------------------------
    "nvmlDeviceGetNvLinkState": both("active", lambda o: word(o) == 1),
    # The answer is an nvmlNvlinkVersion_t (nvml.h of CUDA 12.8 on; cuda.core reads it as one), not the
    # marketing number: NVLink 4.0 is 6; an A100 answers 5 (open-mpi/hwloc#658).
    "nvmlDeviceGetNvLinkVersion": per(("NVLink 4.0 (6)", lambda o: word(o) == 6),
                                      ("NVLink 3.x (5)", lambda o: word(o) == 5)),
    "nvmlDeviceGetNvLinkCapability": both("P2P supported", lambda o: word(o) == 1),
    "nvmlDeviceGetNvLinkErrorCounter": both("no replay errors", lambda o: u64(o) == 0),
    "nvmlDeviceGetNvLinkRemoteDeviceType": both("an NVSwitch (2)", lambda o: word(o) == 2),
    "nvmlDeviceGetNvLinkRemotePciInfo": per(_remote_switch("0000:05:00.0", 5), _remote_switch("0000:01:00.0", 1)),
    "nvmlDeviceGetNvLinkRemotePciInfo_v2": per(_remote_switch("0000:05:00.0", 5), _remote_switch("0000:01:00.0", 1)),
    "nvmlDeviceGetGpuFabricInfo": {"h100": (
        "cluster ...0001, clique 0, COMPLETED", lambda o: o[0]["u32s"][:7] == [0, 0, 0, 1 << 24, SUCCESS, 0, 3])},
    "nvmlDeviceGetGpuFabricInfoV": {"h100": (
        "cluster ...0001, clique 0, COMPLETED, bandwidth not degraded (FALSE, 2)",
        lambda o: o[0]["u32s"][1:8] == [0, 0, 0, 1 << 24, SUCCESS, 0, 3] and word(o, 0, 8) & 0x3 == 2)},
}

#: (function, board) -> the wrong value the mock answers (a strict xfail until fixed).
WRONG: dict = {}


def registries() -> tuple[dict, dict, dict, dict]:
    """VALUES, CODES, RC_ONLY and WRONG merged over every dcgm_values*.py module here."""
    values, codes, rc_only, wrong = {}, {}, {}, {}
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "dcgm_values*.py"))):
        module = importlib.import_module(f"tests.native.{os.path.basename(path)[:-3]}")
        for merged, table in ((values, "VALUES"), (codes, "CODES")):
            for name, boards in getattr(module, table, {}).items():
                merged.setdefault(name, {}).update(boards)
        rc_only.update(getattr(module, "RC_ONLY", {}))
        wrong.update(getattr(module, "WRONG", {}))
    return values, codes, rc_only, wrong
