"""``nvidia-smi -q -x`` text -> the report as plain values: the node's head and,
per GPU, its leaf elements by path, in the one layout of both DTDs.

The v12 layout of drivers 535 to 550 names the module id ``gpu_module_id`` where
v13 (and 570's v12) has ``platformInfo/module_id``; everything else a capture
can say keeps its path across the drivers, so the rest of capture reads one
set of paths. Repeated elements (supported clocks, processes) are kept as
lists. Pure.

The text is hostile input, read in one pass by expat with no tree built: bounded
in size, element count, name length and depth, each checked as the element
starts. Entities are refused by expat's own handlers, not by looking at the
bytes, so no encoding expat reads (UTF-16 without a BOM, say) can slip a
declaration past: a declaration of any kind (general, parameter, external,
unparsed) stops the parse where it is declared, before anything is expanded,
and so does a reference to an entity nobody declared. The DTD the report names
is never fetched (parameter entity parsing off); nvidia-smi's report names one
and declares nothing, so that reads as it always did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.parsers import expat

from mokka.core import names

#: The largest report read: 64 GPUs of a 580 report are about 2 MiB.
MAX_REPORT_BYTES = 16 * 1024 * 1024
#: The most elements a report may have: 64 GPUs of a 580 report have about 34 000, and
#: MAX_REPORT_BYTES of elements laid out as nvidia-smi lays them out about 300 000.
MAX_ELEMENTS = 512 * 1024
#: The most leaves kept, over every GPU: 64 GPUs of a 580 report have about 30 000.
MAX_LEAVES = 64 * 1024
#: The longest element name read (nvidia-smi's longest has 47 characters).
MAX_NAME = 64
ROOT = "nvidia_smi_log"
#: How deep a GPU's elements may nest (nvidia-smi's nest 4 levels below <gpu>).
MAX_DEPTH = 8
#: v12 (535-550) paths -> the paths of every later report.
RENAMED = {"gpu_module_id": "platformInfo/module_id"}
#: Elements kept as lists of their children's leaves.
REPEATED = {"supported_clocks", "processes"}
#: The head's leaves a capture reads.
HEAD = ("driver_version", "cuda_version")
#: Byte order marks expat reads (UTF-8, UTF-16 LE and BE).
BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
#: How UTF-32 text starts (a BOM, or "<" in either byte order), which expat does not read.
UTF32_STARTS = (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00", b"<\x00\x00\x00", b"\x00\x00\x00<")


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
    #: The head's leaves the report prints at all ("driver_version", ...), N/A or not.
    printed: frozenset = frozenset()


def parse(text: str | bytes) -> Report:
    data = text.encode() if isinstance(text, str) else text
    if len(data) > MAX_REPORT_BYTES:
        raise ReportError(f"is over {MAX_REPORT_BYTES // (1024 * 1024)} MiB, more than any "
                          "nvidia-smi -q -x report")
    if data[:4] in UTF32_STARTS:
        raise ReportError("is UTF-32 text, which no XML parser here reads: give the file nvidia-smi -q -x "
                          "wrote (UTF-8)")
    body = next((data[len(bom):] for bom in BOMS if data.startswith(bom)), data).lstrip(b" \t\r\n\x00")
    if not body:
        raise ReportError("is empty; give the output of nvidia-smi -q -x")
    if not body.startswith(b"<"):
        raise ReportError("is not XML: give the output of nvidia-smi -q -x (-x makes it XML)")
    reader = _Reader()
    try:
        reader.parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise ReportError(f"is not whole XML (line {exc.lineno}, column {exc.offset + 1}: "
                          f"{expat.ErrorString(exc.code)}): give the complete output of nvidia-smi -q -x") from None
    except ReportError:
        raise
    except (LookupError, ValueError):              # pyexpat asking Python for the declared encoding
        raise ReportError("declares an encoding no XML parser here reads: give the file nvidia-smi -q -x "
                          "wrote (UTF-8)") from None
    if reader.gpu_count > names.MAX_GPUS:
        raise ReportError(f"lists {reader.gpu_count} GPUs; a profile holds at most {names.MAX_GPUS}")
    if not reader.gpus:
        raise ReportError("lists no GPU (no <gpu> element): capture it on a node whose nvidia-smi "
                          "sees its GPUs")
    dtd = "nvsmi_device_v12.dtd" if "nvsmi_device_v12" in reader.dtd else "nvsmi_device_v13.dtd"
    return Report(driver_version=reader.head.get("driver_version", ""),
                  cuda_version=reader.head.get("cuda_version", ""), dtd=dtd, gpus=tuple(reader.gpus),
                  printed=frozenset(reader.head))


class _Open:
    """An element being read: its path below <gpu> ("" above), the text before its
    first child, and whether it has one."""
    __slots__ = ("tag", "path", "text", "has_child")

    def __init__(self, tag: str, path: str):
        self.tag, self.path, self.text, self.has_child = tag, path, [], False


class _Reader:
    """expat's handlers: the head's leaves, and each GPU's leaves and supported clocks
    as its elements close. Every bound is checked as an element starts; names are not
    interned, so a report of many names costs no more than one of few."""

    def __init__(self):
        self.parser = p = expat.ParserCreate(intern=None)
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartDoctypeDeclHandler = self._doctype
        p.EntityDeclHandler = self._entity
        p.UnparsedEntityDeclHandler = self._entity
        p.SkippedEntityHandler = self._skipped
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._data
        self.dtd = ""
        self.elements = 0
        self.leaves = 0
        self.stack: list[_Open] = []
        self.head: dict[str, str] = {}
        self.gpu_count = 0
        self.gpus: list[Gpu] = []
        self.gpu: tuple | None = None             # (bus id, leaves, supported clocks) being read
        self.mem_clock: list | None = None        # [memory clock text, [graphics clock texts]]

    def _doctype(self, name, system_id, public_id, has_internal_subset) -> None:
        self.dtd = system_id or ""

    def _entity(self, name, *_) -> None:
        raise ReportError("declares XML entities; nvidia-smi -q -x declares none")

    def _skipped(self, name, is_parameter_entity) -> None:
        raise ReportError(f"refers to an entity it does not declare ({'%' if is_parameter_entity else '&'}"
                          f"{name[:40]};); nvidia-smi -q -x refers to none")

    def _start(self, tag: str, attrs: dict) -> None:
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise ReportError(f"has over {MAX_ELEMENTS} elements; a 64-GPU nvidia-smi -q -x report has "
                              "about 34000")
        if len(tag) > MAX_NAME:
            raise ReportError(f"names an element of {len(tag)} characters (<{tag[:40]}...>); nvidia-smi's "
                              f"are under {MAX_NAME}")
        stack = self.stack
        depth = len(stack)
        if depth == 0:
            if tag != ROOT:
                raise ReportError(f"is <{tag[:40]}> XML, not nvidia-smi's <{ROOT}>: give the output of "
                                  "nvidia-smi -q -x")
            stack.append(_Open(tag, ""))
            return
        if depth > MAX_DEPTH + 1:
            raise ReportError(f"nests elements deeper than {MAX_DEPTH} levels below <{stack[1].tag[:40]}>; "
                              "nvidia-smi's report nests 4")
        parent = stack[-1]
        parent.has_child = True
        if depth == 1:
            if tag == "gpu":
                self.gpu_count += 1
                if self.gpu_count <= names.MAX_GPUS:
                    self.gpu = (attrs.get("id", ""), {}, [])
            stack.append(_Open(tag, ""))
            return
        if depth == 3 and tag == "supported_mem_clock" and parent.tag == "supported_clocks":
            self.mem_clock = [None, []]
        stack.append(_Open(tag, f"{parent.path}/{tag}" if parent.path else tag))

    def _data(self, text: str) -> None:
        top = self.stack[-1] if self.stack else None
        if top is not None and not top.has_child:          # the text before the first child
            top.text.append(text)

    def _end(self, tag: str) -> None:
        done = self.stack.pop()
        depth = len(self.stack)
        text = "".join(done.text).strip()
        if depth == 1:
            if tag == "gpu" and self.gpu is not None:
                bus_id, leaves, clocks = self.gpu
                self.gpus.append(Gpu(bus_id=bus_id, leaves=leaves, supported_clocks=tuple(clocks)))
                self.gpu = None
            elif tag in HEAD and not done.has_child:
                self.head.setdefault(tag, text)      # the first, as nvidia-smi prints one
            return
        if depth < 2 or self.gpu is None or self.stack[1].tag != "gpu":
            return
        _, leaves, clocks = self.gpu
        top = self.stack[2].tag if depth > 2 else tag
        if top not in REPEATED:
            if not done.has_child:
                self._leaf(leaves, RENAMED.get(done.path, done.path), text)
        elif depth == 2:
            self._leaf(leaves, done.path, text)
        elif top == "supported_clocks" and self.mem_clock is not None:
            if depth == 3 and tag == "supported_mem_clock":
                clocks.append((self.mem_clock[0] or "", tuple(self.mem_clock[1])))
                self.mem_clock = None
            elif depth == 4 and tag == "value" and self.mem_clock[0] is None:
                self.mem_clock[0] = text
            elif depth == 4 and tag == "supported_graphics_clock":
                self.mem_clock[1].append(text)

    def _leaf(self, leaves: dict, path: str, text: str) -> None:
        if path not in leaves:
            self.leaves += 1
            if self.leaves > MAX_LEAVES:
                raise ReportError(f"has over {MAX_LEAVES} leaf elements in its GPUs; a 64-GPU nvidia-smi -q -x "
                                  "report has about 30000")
        leaves[path] = text
