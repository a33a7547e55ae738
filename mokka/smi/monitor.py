"""What ``nvidia-smi dmon`` and ``pmon`` share: the rounds, and the layout of their lines.

The layout follows NVIDIA's published output (docs/users/nvml.md names the sources): a
5-wide GPU index, or the date and time columns -o asks for before a 3-wide one; the other
columns right-aligned, in the order of the -s letters; a header and a units line each
starting with "#".
"""

from __future__ import annotations

import time

from mokka.smi.monitor_args import MAX_DEVICES, Monitor

MiB = 1 << 20
DASH = "-"
#: The widths of -o's date and time columns.
STAMP_WIDTHS = (11, 12)


def num(value) -> str:
    """An integer reading, or "-" where the library has none."""
    return str(int(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else DASH


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
        data = kind == "data"
        asked = (self.mon.date, self.mon.time)
        dated = [s for s, on in zip(stamp, asked) if on]
        if self.csv:
            lead = [*dated, cells[0]]
            if not data:
                lead[0] = ("#" if dated else "# ") + lead[0]
            return lead + cells[1:]
        text = "".join(s.ljust(w) for s, w, on in zip(stamp, STAMP_WIDTHS, asked) if on)
        prefix = (" " if data else "#") + text if text else ("  " if data else "# ")
        return [prefix + cells[0].rjust(3)] + cells[1:]

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
        if mon.sub == "dmon":
            from mokka.smi import dmon
            return dmon.run(mon, gpus, target)
        from mokka.smi import pmon
        return pmon.run(mon, gpus, target)
    finally:
        if target is not out:
            target.close()


def rounds(mon: Monitor):
    n = 0
    while mon.count is None or n < mon.count:
        if n:
            time.sleep(mon.delay)
        yield n
        n += 1
