"""``nvidia-smi dmon`` and ``pmon``: a header, then one line per GPU (dmon) or per process
(pmon) every interval, from the library's readings of that moment.

The line layout follows NVIDIA's published output (docs/users/nvidia-smi.md names the
sources): columns 7 wide after a 5-wide GPU index, in the order of the -s letters.
"""

from __future__ import annotations

import ctypes as C
import os
import time

from mokka.engine import nvml
from mokka.smi import gpm
from mokka.smi.monitor_args import MAX_DEVICES, Monitor

MiB = 1 << 20
DASH = "-"
#: nvmlPerfPolicyType_t and nvmlPcieUtilCounter_t values dmon reads.
POLICY_POWER, POLICY_THERMAL = 0, 1
PCIE_TX, PCIE_RX = 0, 1
FI_MEMORY_TEMP = 82
#: pmon prints a process's command in this many characters.
COMMAND_WIDTH = 15


def num(value) -> str:
    """An integer reading, or "-" where the library has none."""
    return str(int(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else DASH


def _mib(reading) -> str:
    return DASH if reading is None else str(reading.used // MiB)


def _engine(gpu, name: str) -> str:
    return num(gpu.engine_utilization(name))


def _util(gpu, part: str) -> str:
    u = gpu.utilization()
    return DASH if u is None else str(getattr(u, part))


def _violation(gpu, policy: int):
    from mokka.engine import nvml_types
    out = nvml_types.ViolationTime()
    ok = gpu.lib.ask("nvmlDeviceGetViolationStatus", gpu.handle, C.c_int(policy), C.byref(out))
    return out.violationTime if ok == nvml.SUCCESS else None


class Violations:
    """pviol (% of the interval the power cap held the clocks) and tviol (whether a
    thermal limit did), from the change of NVML's violation times since the last line."""

    def __init__(self):
        self.last: dict = {}

    def read(self, gpu) -> tuple[str, str]:
        now = time.monotonic_ns()
        power, thermal = _violation(gpu, POLICY_POWER), _violation(gpu, POLICY_THERMAL)
        before = self.last.get(gpu.index)
        self.last[gpu.index] = (now, power, thermal)
        if before is None:
            return ("0" if power is not None else DASH), ("0" if thermal is not None else DASH)
        elapsed = max(now - before[0], 1)
        pviol = DASH if power is None or before[1] is None else \
            str(min(100, (power - before[1]) * 100 // elapsed))
        tviol = DASH if thermal is None or before[2] is None else str(int(thermal > before[2]))
        return pviol, tviol


#: dmon's groups: -s letter -> [(header, unit)], in NVIDIA's order.
DMON_GROUPS = {
    "p": [("pwr", "W"), ("gtemp", "C"), ("mtemp", "C")],
    "u": [("sm", "%"), ("mem", "%"), ("enc", "%"), ("dec", "%"), ("jpg", "%"), ("ofa", "%")],
    "c": [("mclk", "MHz"), ("pclk", "MHz")],
    "v": [("pviol", "%"), ("tviol", "bool")],
    "m": [("fb", "MB"), ("bar1", "MB"), ("ccpm", "MB")],
    "e": [("sbecc", "errs"), ("dbecc", "errs"), ("pci", "errs")],
    "t": [("rxpci", "MB/s"), ("txpci", "MB/s")],
}


def _group(letter: str, gpu, violations: Violations) -> list:
    if letter == "p":
        power = gpu.power_usage()
        return [num(round(power / 1000)) if isinstance(power, int) else DASH, num(gpu.temperature()),
                num(gpu.fields([FI_MEMORY_TEMP])[0])]
    if letter == "u":
        return [_util(gpu, "gpu"), _util(gpu, "memory")] + [
            _engine(gpu, e) for e in ("Encoder", "Decoder", "Jpg", "Ofa")]
    if letter == "c":
        return [num(gpu.clock(2)), num(gpu.clock(0))]
    if letter == "v":
        return list(violations.read(gpu))
    if letter == "m":
        return [_mib(gpu.memory()), _mib(gpu.bar1()), _mib(gpu.cc_protected_memory())]
    if letter == "e":
        ecc_on = (gpu.ecc_mode() or (None,))[0]
        eccs = [num(gpu.ecc_total(kind, 0)) if ecc_on else DASH for kind in (0, 1)]
        return eccs + [num(gpu.pcie_replay_counter())]
    kbs = [gpu.pcie_throughput(PCIE_RX), gpu.pcie_throughput(PCIE_TX)]
    return [num(k // 1024) if isinstance(k, int) else DASH for k in kbs]


class Lines:
    """The layout of one run: the date and time columns -o asks for, csv or aligned."""

    def __init__(self, mon: Monitor):
        self.mon = mon
        self.csv = "csv" in mon.formats

    def _lead(self, cells: list, kind: str) -> str:
        """The leading columns: date and time when asked for, then the GPU index."""
        stamp = {"head": ("Date", "Time"), "unit": ("YYYYMMDD", "HH:MM:SS")}.get(kind)
        if stamp is None:
            now = time.localtime()
            stamp = (time.strftime("%Y%m%d", now), time.strftime("%H:%M:%S", now))
        first = [] if not self.mon.date else [stamp[0]]
        first += [] if not self.mon.time else [stamp[1]]
        mark = "#" if kind != "data" else " "
        if self.csv:
            return ([mark + first[0]] + first[1:] + cells) if first else [
                (mark + " " if kind != "data" else "") + cells[0]] + cells[1:]
        dated = ""
        if self.mon.date:
            dated += stamp[0].ljust(11)
        if self.mon.time:
            dated += stamp[1].ljust(12)
        lead = (mark + dated if dated else (mark + " " if kind != "data" else "  ")) + cells[0].rjust(3)
        return [lead] + cells[1:]

    def line(self, kind: str, cells: list, widths: list, end: str = " \n") -> str:
        cells = self._lead(cells, kind)
        if self.csv:
            return ", ".join(c.strip() for c in cells) + "\n"
        return cells[0] + "".join(c.rjust(w) for c, w in zip(cells[1:], widths)) + end

    def header(self, names: list, units: list, widths: list) -> str:
        out = ""
        if "noheader" not in self.mon.formats:
            out += self.line("head", names, widths)
        if "nounit" not in self.mon.formats:
            out += self.line("unit", units, widths)
        return out


def run(mon: Monitor, gpus: list, out) -> int:
    if mon.ids is None:
        gpus = gpus[:MAX_DEVICES[mon.sub]]
    target = open(mon.file, "w") if mon.file else out
    try:
        return (_dmon if mon.sub == "dmon" else _pmon)(mon, gpus, target)
    finally:
        if target is not out:
            target.close()


def _rounds(mon: Monitor):
    n = 0
    while mon.count is None or n < mon.count:
        if n:
            time.sleep(mon.delay)
        yield n
        n += 1


def _dmon(mon: Monitor, gpus: list, out) -> int:
    lines = Lines(mon)
    columns = [c for letter in mon.select for c in DMON_GROUPS[letter]]
    sampler = gpm.Sampler(mon.gpm) if mon.gpm else None
    columns += sampler.columns() if sampler else []
    names, units = ["gpu"] + [n for n, _ in columns], ["Idx"] + [u for _, u in columns]
    widths = [max(7, len(name) + 2) for name, _ in columns]
    violations = Violations()
    out.write(lines.header(names, units, widths))
    try:
        for _ in _rounds(mon):
            for gpu in gpus:
                cells = [str(gpu.index)] + [c for letter in mon.select for c in _group(letter, gpu, violations)]
                cells += sampler.read(gpu) if sampler else []
                out.write(lines.line("data", cells, widths))
            out.flush()
    finally:
        if sampler:
            sampler.close()
    return 0


#: pmon's groups: -s letter -> [(header, unit)]; the command column ends every line.
PMON_GROUPS = {
    "u": [("sm", "%"), ("mem", "%"), ("enc", "%"), ("dec", "%"), ("jpg", "%"), ("ofa", "%")],
    "m": [("fb", "MB"), ("ccpm", "MB")],
}


def _process_samples(gpu) -> dict:
    """pid -> nvmlProcessUtilizationSample_t of the GPU's processes, {} where NVML has none."""
    from mokka.engine import nvml_types
    count = C.c_uint(0)
    code = gpu.lib.ask("nvmlDeviceGetProcessUtilization", gpu.handle, None, C.byref(count), C.c_ulonglong(0))
    if code != nvml.INSUFFICIENT_SIZE or not count.value:
        return {}
    size = min(count.value + 16, 1024)
    samples = (nvml_types.ProcessUtilizationSample * size)()
    count = C.c_uint(size)
    code = gpu.lib.ask("nvmlDeviceGetProcessUtilization", gpu.handle, samples, C.byref(count), C.c_ulonglong(0))
    return {s.pid: s for s in samples[:count.value]} if code == nvml.SUCCESS else {}


def _pmon_cells(letter: str, gpu, sample, used, cc_known: bool) -> list:
    if letter == "u":
        if sample is None:
            return [DASH] * 6
        # Engines a process does not use print as "-", as NVIDIA's captures show.
        busy = [str(v) if v else DASH for v in (sample.encUtil, sample.decUtil)]
        return [str(sample.smUtil), str(sample.memUtil)] + busy + [DASH, DASH]
    return [num(used // MiB) if isinstance(used, int) else DASH, "0" if cc_known else DASH]


def _pmon(mon: Monitor, gpus: list, out) -> int:
    lines = Lines(mon)
    columns = [c for letter in mon.select for c in PMON_GROUPS[letter]]
    names = ["gpu", "pid", "type"] + [n for n, _ in columns] + ["    command"]
    units = ["Idx", "#", "C/G"] + [u for _, u in columns] + ["    name"]
    head_widths = [12, 7] + [7] * len(columns) + [0]
    data_widths = [11, 6] + [7] * len(columns) + [4 + COMMAND_WIDTH]
    out.write(lines.header(names, units, head_widths))
    for _ in _rounds(mon):
        for gpu in gpus:
            procs = gpu.processes()
            samples = _process_samples(gpu) if procs and "u" in mon.select else {}
            cc_known = gpu.cc_protected_memory() is not None
            if not procs:
                cells = [str(gpu.index), DASH, DASH] + [DASH] * len(columns) + [_command(DASH)]
                out.write(lines.line("data", cells, data_widths, "\n"))
            for pid, used, kind, name in procs:
                cells = [str(gpu.index), str(pid), kind]
                for letter in mon.select:
                    cells += _pmon_cells(letter, gpu, samples.get(pid), used, cc_known)
                out.write(lines.line("data", cells + [_command(os.path.basename(name) or DASH)], data_widths, "\n"))
        out.flush()
    return 0


def _command(name: str) -> str:
    return "    " + name[:COMMAND_WIDTH].ljust(COMMAND_WIDTH)
