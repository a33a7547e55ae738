"""``nvidia-smi dmon``: one line per GPU a round, the groups -s selects, and the GPM
metrics --gpm-metrics asks for."""

from __future__ import annotations

import ctypes as C
import time

from mokka.engine import nvml
from mokka.smi import gpm
from mokka.smi.monitor import DASH, MiB, Lines, num, rounds
from mokka.smi.monitor_args import Monitor

#: nvmlPerfPolicyType_t and nvmlPcieUtilCounter_t values dmon reads.
#: nvmlPerfPolicyType_t: power capping, and thermal slowdowns (software and hardware together).
POLICY_POWER, POLICY_THERMAL = 0, 1
PCIE_TX, PCIE_RX = 0, 1
FI_MEMORY_TEMP = 82
CLOCK_GRAPHICS, CLOCK_MEM = 0, 2


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
    thermal limit did), from the change of NVML's power and thermal violation times since
    the last line."""

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
        return [num(gpu.clock(CLOCK_MEM)), num(gpu.clock(CLOCK_GRAPHICS))]
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


def run(mon: Monitor, gpus: list, out) -> int:
    lines = Lines(mon)
    columns = [c for letter in mon.select for c in DMON_GROUPS[letter]]
    sampler = gpm.Sampler(mon.gpm) if mon.gpm else None
    widths = [max(7, len(name) + 2) for name, _ in columns]
    if sampler and gpus:
        metrics = sampler.columns(gpus[0])
        columns += metrics
        widths += [gpm.WIDTH] * len(metrics)
    names, units = ["gpu"] + [n for n, _ in columns], ["Idx"] + [u for _, u in columns]
    violations = Violations()
    out.write(lines.header(names, units, widths))
    try:
        for _ in rounds(mon):
            for gpu in gpus:
                cells = [str(gpu.index)]
                for letter in mon.select:
                    cells += _group(letter, gpu, violations)
                cells += sampler.read(gpu) if sampler else []
                out.write(lines.line("data", cells, widths))
            out.flush()
    finally:
        if sampler:
            sampler.close()
    return 0
