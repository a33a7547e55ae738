"""``nvidia-smi dmon`` and ``pmon``'s own command lines, read as NVIDIA's 550 reads them:
each bad option is answered with its message and the usage (monitor_help) before the
library is opened."""

from __future__ import annotations

from dataclasses import dataclass, field

from mokka.smi import monitor_help as h

#: -s letters each accepts, and its default; the most devices each watches without -i
#: (550's pmon watches all eight GPUs of a node, whatever its help says of four).
SELECT = {"dmon": ("pucvmet", "puc"), "pmon": ("um", "u")}
MAX_DEVICES = {"dmon": 16, "pmon": 16}
MAX_DELAY = {"dmon": 600, "pmon": 10}
FORMATS = ("csv", "nounit", "noheader")
GPM_OPTIONS = ("d", "m", "dm", "md")
#: The GPM metric ids dmon's help lists (nvml.h's nvmlGpmMetricId_t).
GPM_IDS = frozenset([*range(1, 8), *range(9, 14), 20, 21, *range(30, 38), *range(40, 48), 50,
                     *range(60, 98)])

_KEYS = {"-i": "ids", "--id": "ids", "-d": "delay", "--delay": "delay", "-c": "count",
         "--count": "count", "-s": "select", "--select": "select", "-o": "options",
         "--options": "options", "-f": "file", "--filename": "file"}
_DMON_KEYS = {"--gpm-metrics": "gpm", "--gpm-options": "gpm_options", "--format": "format"}


class Answer(Exception):
    """What 550 prints instead of monitoring (help, or a bad option and the usage); exit 0."""


@dataclass
class Monitor:
    sub: str
    ids: str | None = None
    delay: int = 1
    count: int | None = None
    select: str = ""
    date: bool = False
    time: bool = False
    file: str | None = None
    formats: tuple = ()
    gpm: list = field(default_factory=list)


def parse(sub: str, rest: list) -> Monitor:
    text = h.DMON_HELP if sub == "dmon" else h.PMON_HELP
    keys = {**_KEYS, **(_DMON_KEYS if sub == "dmon" else {})}
    allowed, default = SELECT[sub]
    mon = Monitor(sub, select=default)

    def bad(message: str):
        raise Answer(h.usage_error(text, message))

    i = 0
    while i < len(rest):
        word = rest[i]
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in ("-h", "--help"):
            raise Answer(text)
        if name not in keys:
            bad(h.NOT_RECOGNIZED.format(word))
        if not eq:
            if i + 1 >= len(rest):
                bad(h.MISSING_VALUE.format(name))
            value, i = rest[i + 1], i + 1
        i += 1
        key = keys[name]
        if key == "count":
            if not value.isdigit() or int(value) < 1:
                bad(h.BAD_COUNT)
            mon.count = int(value)
        elif key == "delay":
            if not value.isdigit() or not 1 <= int(value) <= MAX_DELAY[sub]:
                bad(h.BAD_DELAY.format(MAX_DELAY[sub]))
            mon.delay = int(value)
        elif key == "select":
            if not value or set(value) - set(allowed):
                bad(h.BAD_VALUE.format(name, value))
            mon.select = "".join(dict.fromkeys(value))
        elif key == "options":
            if not value or set(value) - set("DT"):
                bad(h.BAD_VALUE.format(name, value))
            mon.date, mon.time = "D" in value, "T" in value
        elif key == "format":
            parts = tuple(p.strip() for p in value.split(","))
            if not all(p in FORMATS for p in parts):
                bad(h.BAD_VALUE.format(name, value))
            mon.formats = parts
        elif key == "gpm":
            ids = [p.strip() for p in value.split(",")]
            if not all(p.isdigit() and int(p) in GPM_IDS for p in ids):
                bad(h.BAD_VALUE.format(name, value))
            mon.gpm = list(dict.fromkeys(int(p) for p in ids))
        elif key == "gpm_options":
            if value not in GPM_OPTIONS:
                bad(h.BAD_VALUE.format(name, value))
        else:
            setattr(mon, key, value)
    return mon
