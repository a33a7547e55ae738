"""Just enough ELF reading for Mokka: the machine, a binary's RUNPATH, its
DT_NEEDED libraries and soname.

Pure functions over bytes (64-bit little-endian files, which is what x86_64
and aarch64 Linux use); no tool is needed to check a binary before staging it.
"""

from __future__ import annotations

import struct

MACHINES = {62: "x86_64", 183: "aarch64"}
_PT_DYNAMIC = 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 14, 15, 29
_PT_LOAD = 1


class ElfError(ValueError):
    pass


def _header(data: bytes) -> tuple[int, int, int, int]:
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    machine = struct.unpack_from("<H", data, 18)[0]
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    return machine, phoff, phentsize, phnum


def machine(data: bytes) -> str:
    """``x86_64``, ``aarch64`` or ``e_machine=<n>``."""
    number = _header(data)[0]
    return MACHINES.get(number, f"e_machine={number}")


def _segments(data: bytes):
    _, phoff, phentsize, phnum = _header(data)
    for n in range(phnum):
        yield struct.unpack_from("<IIQQQQQQ", data, phoff + n * phentsize)


def _file_offset(data: bytes, vaddr: int) -> int:
    for p_type, _, offset, p_vaddr, _, filesz, _, _ in _segments(data):
        if p_type == _PT_LOAD and p_vaddr <= vaddr < p_vaddr + filesz:
            return offset + vaddr - p_vaddr
    raise ElfError(f"address {vaddr:#x} is in no loaded segment")


def search_path(data: bytes) -> str | None:
    """The DT_RUNPATH (or else DT_RPATH) string of a dynamic executable, or None."""
    for p_type, _, offset, _, _, filesz, _, _ in _segments(data):
        if p_type != _PT_DYNAMIC:
            continue
        entries = {}
        for pos in range(offset, offset + filesz, 16):
            tag, value = struct.unpack_from("<qQ", data, pos)
            if tag == _DT_NULL:
                break
            entries.setdefault(tag, value)
        name = entries.get(_DT_RUNPATH, entries.get(_DT_RPATH))
        if name is None or _DT_STRTAB not in entries:
            return None
        start = _file_offset(data, entries[_DT_STRTAB]) + name
        return data[start:data.index(b"\0", start)].decode()
    return None


def _dynamic(data: bytes) -> tuple[list[tuple[int, int]], int | None]:
    """(every (tag, value) of the dynamic section, the string table's file offset)."""
    for p_type, _, offset, _, _, filesz, _, _ in _segments(data):
        if p_type != _PT_DYNAMIC:
            continue
        entries = []
        for pos in range(offset, offset + filesz, 16):
            tag, value = struct.unpack_from("<qQ", data, pos)
            if tag == _DT_NULL:
                break
            entries.append((tag, value))
        strtab = next((v for t, v in entries if t == _DT_STRTAB), None)
        return entries, (_file_offset(data, strtab) if strtab is not None else None)
    return [], None


def _string(data: bytes, table: int, offset: int) -> str:
    start = table + offset
    return data[start:data.index(b"\0", start)].decode()


def needed(data: bytes) -> list[str]:
    """The DT_NEEDED names, in order ([] for a static binary)."""
    entries, table = _dynamic(data)
    return [_string(data, table, v) for t, v in entries if t == _DT_NEEDED and table is not None]


def soname(data: bytes) -> str | None:
    entries, table = _dynamic(data)
    return next((_string(data, table, v) for t, v in entries if t == _DT_SONAME and table is not None),
                None)
