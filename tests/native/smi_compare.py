"""How NVIDIA's nvidia-smi 550 and ours are compared: what each view means as values.

``-q`` text as {(bus id, section..., label): value}, ``-q -x`` as {(bus id, tag path): text},
``topo -m``'s GPU block as rows of cells. Both tools read the same library, so where
both print a value they must print the same one.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

#: nvidia-smi 550 predates Blackwell: it names NVML's architecture 10 "Unknown".
PRE_BLACKWELL_NAME = "Unknown"
#: What either prints where it has no value.
NA = {"N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", "None", ""}


def blackwell_unknown(ours: str, theirs: str) -> bool:
    return ours == "Blackwell" and theirs == PRE_BLACKWELL_NAME


def parse_q(text: str) -> dict[tuple, str]:
    """``-q`` as {(gpu bus id, section, ..., key): value}, nesting by indentation."""
    out: dict[tuple, str] = {}
    stack: list[tuple[int, str]] = []
    gpu = None
    for line in text.splitlines():
        if line.startswith("GPU "):
            gpu, stack = line[4:].strip(), []
            continue
        if gpu is None or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        key, sep, value = line.strip().partition(":")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if sep:
            out[(gpu, *[s for _, s in stack], key.strip())] = value.strip()
        else:
            stack.append((indent, key.strip()))
    return out


def xml_leaves(text: str) -> dict[tuple, str]:
    root = ET.fromstring(text)
    out = {}
    for gpu in root.findall("gpu"):
        bus = gpu.get("id")

        def walk(elem, path):
            children = list(elem)
            if not children:
                out[(bus, *path)] = (elem.text or "").strip()
            for child in children:
                walk(child, path + (child.tag,))
        walk(gpu, ())
    return out


def gpu_matrix(text: str) -> list[list[str]]:
    """The GPU-to-GPU block of ``topo -m`` (affinity columns come from the host)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)                # NVIDIA underlines the header
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header = lines[0].split()
    count = sum(1 for h in header if re.fullmatch(r"GPU\d+", h))
    rows = [ln.split() for ln in lines[1:] if re.match(r"GPU\d+\s", ln)]
    return [row[:count + 1] for row in rows]


