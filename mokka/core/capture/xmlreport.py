"""``nvidia-smi -q -x`` text -> the report as plain values: the node's head and,
per GPU, its leaf elements by path, in the one layout of both DTDs.

The v12 layout of drivers 535 to 550 names the module id ``gpu_module_id`` where
v13 (and 570's v12) has ``platformInfo/module_id``; everything else a capture
can say keeps its path across the drivers, so the rest of capture reads one
set of paths. Repeated elements (supported clocks, processes) are kept as
lists. The text is hostile input: bounded in size, refused when it declares
entities (nvidia-smi's report declares none), and parsed without fetching the
DTD it names. Pure.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from mokka.core import names

#: The largest report read: 64 GPUs of a 580 report are about 2 MiB.
MAX_REPORT_BYTES = 16 * 1024 * 1024
ROOT = "nvidia_smi_log"
#: How deep a GPU's elements may nest (nvidia-smi's nest 4 levels below <gpu>).
MAX_DEPTH = 8
#: v12 (535-550) paths -> the paths of every later report.
RENAMED = {"gpu_module_id": "platformInfo/module_id"}
#: Elements kept as lists of their children's leaves.
REPEATED = {"supported_clocks", "processes"}


class ReportError(ValueError):
    """What is wrong with the text, in words for one line after the file's name."""


@dataclass(frozen=True)
class Gpu:
    bus_id: str
    leaves: dict                          # "fb_memory_usage/total" -> "40960 MiB"
    supported_clocks: tuple = ()          # ((memory MHz text, (graphics MHz text, ...)), ...)


@dataclass(frozen=True)
class Report:
    driver_version: str
    cuda_version: str
    dtd: str
    gpus: tuple = field(default_factory=tuple)


def parse(text: str | bytes) -> Report:
    data = text.encode() if isinstance(text, str) else text
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(f"is over {MAX_REPORT_BYTES // (1024 * 1024)} MiB, more than any "
                          "nvidia-smi -q -x report")
    if b"<!ENTITY" in data:
        raise ReportError("declares XML entities; nvidia-smi -q -x declares none")
    if not data.strip():
        raise ReportError("is empty; give the output of nvidia-smi -q -x")
    if not data.lstrip().startswith(b"<"):
        raise ReportError("is not XML: give the output of nvidia-smi -q -x (-x makes it XML)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        line, column = exc.position
        raise ReportError(f"is not whole XML (line {line}, column {column + 1}): give the complete "
                          "output of nvidia-smi -q -x") from None
    if root.tag != ROOT:
        raise ReportError(f"is <{root.tag[:40]}> XML, not nvidia-smi's <{ROOT}>: give the output of "
                          "nvidia-smi -q -x")
    found = root.findall("gpu")
    if len(found) > names.MAX_GPUS:
        raise ReportError(f"lists {len(found)} GPUs; a profile holds at most {names.MAX_GPUS}")
    gpus = tuple(_gpu(el) for el in found)
    if not gpus:
        raise ReportError("lists no GPU (no <gpu> element): capture it on a node whose nvidia-smi "
                          "sees its GPUs")
    dtd = "nvsmi_device_v12.dtd" if b"nvsmi_device_v12" in data[:512] else "nvsmi_device_v13.dtd"
    return Report(driver_version=_text(root.find("driver_version")),
                  cuda_version=_text(root.find("cuda_version")), dtd=dtd, gpus=gpus)


def _text(el) -> str:
    return "" if el is None else (el.text or "").strip()


def _gpu(el) -> Gpu:
    leaves: dict[str, str] = {}
    clocks: list = []

    def walk(node, path: str) -> None:
        if path.count("/") >= MAX_DEPTH:
            raise ReportError(f"nests elements deeper than {MAX_DEPTH} levels below <gpu>; "
                              "nvidia-smi's report nests 4")
        for child in node:
            sub = f"{path}{child.tag}"
            if sub in REPEATED:
                if sub == "supported_clocks":
                    clocks.extend(_clock_pair(m) for m in child.findall("supported_mem_clock"))
                leaves[sub] = _text(child)
                continue
            if len(child):
                walk(child, sub + "/")
            else:
                leaves[RENAMED.get(sub, sub)] = _text(child)
    walk(el, "")
    return Gpu(bus_id=el.get("id", ""), leaves=leaves, supported_clocks=tuple(clocks))


def _clock_pair(mem) -> tuple:
    return _text(mem.find("value")), tuple(_text(g) for g in mem.findall("supported_graphics_clock"))
