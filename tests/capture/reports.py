"""How a capture is compared with a report printed over the mock: their leaves by path.

A leaf's path names each element with its position among siblings of its tag
(``gpu[0]/supported_clocks/supported_mem_clock[0]/supported_graphics_clock[12]``),
so repeated elements compare one by one and GPUs compare in report order.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from tests.conftest import REPO

CAPTURES = os.path.join(os.path.dirname(REPO), "shared", "reference", "captures")
#: Leaves that say when, not what: the report's own time and the InfoROM's last flush.
TIMESTAMPS = {"timestamp", "latest_timestamp"}


def capture_files() -> list[str]:
    return sorted(os.path.join(CAPTURES, f) for f in os.listdir(CAPTURES) if f.endswith(".xml")) \
        if os.path.isdir(CAPTURES) else []


def leaves(text: str) -> dict[str, str]:
    out: dict[str, str] = {}

    def walk(el, path: str) -> None:
        kids = list(el)
        if not kids:
            out[path] = (el.text or "").strip()
            return
        seen: dict[str, int] = {}
        for kid in kids:
            n = seen[kid.tag] = seen.get(kid.tag, -1) + 1
            many = kid.tag == "gpu" or sum(1 for k in kids if k.tag == kid.tag) > 1
            walk(kid, f"{path}/{kid.tag}[{n}]" if many else f"{path}/{kid.tag}")
    walk(ET.fromstring(text), "")
    return {path.lstrip("/"): text for path, text in out.items()}


def tag(path: str) -> str:
    return path.rsplit("/", 1)[-1].split("[", 1)[0]


def compared(capture: dict) -> dict:
    return {path: text for path, text in capture.items() if tag(path) not in TIMESTAMPS}


#: Where NVIDIA's nvidia-smi 550 prints its own words, being older than the capture's driver:
#: no name for Blackwell, and the display mode where 580 on prints NVML's deprecation.
PRE_580_WORDS = {
    "product_architecture": lambda capture, theirs: theirs == "Unknown",
    "display_mode": lambda capture, theirs: capture == "Requested functionality has been deprecated",
}


def older_words(capture: dict, theirs: dict) -> list[str]:
    """The leaves 550 prints in its own words (PRE_580_WORDS) where the capture's differ."""
    return [k for k in capture if k in theirs and tag(k) in PRE_580_WORDS and theirs[k] != capture[k]
            and PRE_580_WORDS[tag(k)](capture[k], theirs[k])]
