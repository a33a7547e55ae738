"""``nvidia-smi pmon``: one line per process on each GPU a round (one of "-" for a GPU
with none): its pid, type, utilization (-s u) and memory (-s m), and its command."""

from __future__ import annotations

import ctypes as C
import os

from mokka.core import names
from mokka.engine import nvml
from mokka.smi.gpu import PROCESS_SLACK
from mokka.smi.monitor import DASH, MiB, Lines, num, rounds
from mokka.smi.monitor_args import Monitor

#: pmon prints a process's command in this many characters.
COMMAND_WIDTH = 15


#: pmon's groups: -s letter -> [(header, unit)]; the command column ends every line.
PMON_GROUPS = {
    "u": [("sm", "%"), ("mem", "%"), ("enc", "%"), ("dec", "%"), ("jpg", "%"), ("ofa", "%")],
    "m": [("fb", "MB"), ("ccpm", "MB")],
}


def _process_samples(gpu) -> dict:
    """pid -> nvmlProcessUtilizationSample_t of the GPU's processes, {} where NVML has none."""
    from mokka.engine import nvml_types
    count = C.c_uint(0)
    ask = "nvmlDeviceGetProcessUtilization"
    if gpu.lib.ask(ask, gpu.handle, None, C.byref(count), C.c_ulonglong(0)) != nvml.INSUFFICIENT_SIZE:
        return {}
    # A process may start between the two asks: room for a few more.
    size = min(count.value + PROCESS_SLACK, names.MAX_GPU_PROCESSES)
    samples = (nvml_types.ProcessUtilizationSample * size)()
    count = C.c_uint(size)
    if gpu.lib.ask(ask, gpu.handle, samples, C.byref(count), C.c_ulonglong(0)) != nvml.SUCCESS:
        return {}
    return {s.pid: s for s in samples[:min(count.value, size)]}


def _pmon_cells(letter: str, sample, used) -> list:
    if letter == "u":
        if sample is None:
            return [DASH] * 6
        # Engines a process does not use print as "-", as NVIDIA's captures show.
        busy = [str(v) if v else DASH for v in (sample.encUtil, sample.decUtil)]
        return [str(sample.smUtil), str(sample.memUtil)] + busy + [DASH, DASH]
    # The library keeps no process's share of protected memory: none.
    return [num(used // MiB) if isinstance(used, int) else DASH, "0"]


def run(mon: Monitor, gpus: list, out) -> int:
    lines = Lines(mon)
    columns = [c for letter in mon.select for c in PMON_GROUPS[letter]]
    heads = ["gpu", "pid", "type"] + [n for n, _ in columns] + ["    command"]
    units = ["Idx", "#", "C/G"] + [u for _, u in columns] + ["    name"]
    head_widths = [12, 7] + [7] * len(columns) + [0]
    data_widths = [11, 6] + [7] * len(columns) + [4 + COMMAND_WIDTH]
    out.write(lines.header(heads, units, head_widths))
    for _ in rounds(mon):
        for gpu in gpus:
            procs = gpu.processes()
            samples = _process_samples(gpu) if procs and "u" in mon.select else {}
            if not procs:
                cells = [str(gpu.index), DASH, DASH] + [DASH] * len(columns) + [_command(DASH)]
                out.write(lines.line("data", cells, data_widths, "\n"))
            for pid, used, kind, name in procs:
                cells = [str(gpu.index), str(pid), kind]
                for letter in mon.select:
                    cells += _pmon_cells(letter, samples.get(pid), used)
                cells.append(_command(os.path.basename(name) or DASH))
                out.write(lines.line("data", cells, data_widths, "\n"))
        out.flush()
    return 0


def _command(name: str) -> str:
    return "    " + name[:COMMAND_WIDTH].ljust(COMMAND_WIDTH)
