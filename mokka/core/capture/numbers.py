"""The numbers of a report's leaves, read only in the forms nvidia-smi prints them.

An integer is ASCII digits up to a signed 64-bit value (what a profile holds), then
nothing, "x" (a link width "16x") or a unit after a space ("40960 MiB", "35 %"); only
a temperature (``signed``) has a minus ("-5 C", a threshold below T.Limit). A hex id
is "0x" and at most 16 hex digits (a PCI id: 8, without "0x"); a power reading is
watts with at most 6 decimals ("70.00 W"). Anything else raises ValueError: "nan",
"inf", "1e309", "1_000", "+5", "-1" where nvidia-smi prints no sign, digits of
another script ("١٢"), a number past what a profile holds. A field's own range is
the profile schema's to check. Pure.
"""

from __future__ import annotations

import re

from mokka.core.schema import INT64_MAX               # the largest integer a profile holds

_INTEGER = re.compile(r"(-?[0-9]{1,19})(?:x| .*)?", re.ASCII | re.DOTALL)
_HEX = re.compile(r"0[xX]([0-9A-Fa-f]{1,16})(?: .*)?", re.ASCII | re.DOTALL)
_PCI_ID = re.compile(r"[0-9A-Fa-f]{8}", re.ASCII)
_HEX_WORD = re.compile(r"(?:0[xX])?([0-9A-Fa-f]{1,16})", re.ASCII)
_WATTS = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,6})?)(?: W)?", re.ASCII)


def integer(text: str, maximum: int = INT64_MAX) -> int:
    """"40960 MiB" -> 40960, "16x" -> 16; at most ``maximum``."""
    value = signed(text, maximum)
    if value < 0:
        raise ValueError(text)
    return value


def signed(text: str, maximum: int = INT64_MAX) -> int:
    """"-5 C" -> -5: an integer that may be negative, at most ``maximum`` either way."""
    match = _INTEGER.fullmatch(text)
    if not match or abs(int(match.group(1))) > maximum:
        raise ValueError(text)
    return int(match.group(1))


def hex_integer(text: str) -> int:
    """"0x20B010DE" -> 0x20B010DE."""
    match = _HEX.fullmatch(text)
    if not match:
        raise ValueError(text)
    return int(match.group(1), 16)


def number(text: str) -> int:
    """The integer a leaf holds, in decimal or (after "0x") hex."""
    return hex_integer(text) if text[:2].lower() == "0x" else integer(text)


def pci_id(text: str) -> str:
    """"20B010DE" (nvidia-smi prints a PCI id as 8 hex digits, without 0x) -> "0x20B010DE"."""
    if not _PCI_ID.fullmatch(text):
        raise ValueError(text)
    return "0x" + text.upper()


def hex_word(text: str) -> int:
    """One word of a list of hex numbers, "0x" or not: a retired page's address."""
    match = _HEX_WORD.fullmatch(text)
    if not match:
        raise ValueError(text)
    return int(match.group(1), 16)


def milliwatts(text: str) -> int:
    """"70.00 W" -> 70000."""
    match = _WATTS.fullmatch(text)
    if not match:
        raise ValueError(text)
    return round(float(match.group(1)) * 1000)
