"""The C-friendly companions of Mokka's YAML documents (``X.yaml`` -> ``X.nvml``).

The mock NVML library (``native/nvml``) reads compiled facts, never YAML or
JSON. Each document a process may consult — the staged profile (with the
ComputeDomain topology already applied, mokka/core/topology.py), the runtime
overrides, the Xid events — gets a companion beside it, written in the same step, that the library parses with a line scanner and
binary search (the format's C side and its full description: native/nvml/engine/flat.h):

    # mokka-nvml <kind> 2
    digest sha256:<hex of the YAML file's bytes>
    body <bytes> crc32:<8 hex digits>
    gpu.0.memory.total_bytes 85899345920
    gpu.0.name NVIDIA H100 80GB HBM3
    gpu.0.nvlink_links.len 18
    gpu.0.nvlink_links.0.state active
    ...

One ``<key> <value>`` per line, sorted by key as bytes (C ``strcmp`` order), so
the reader needs no sort. Keys are the dotted paths of the document's scalar
leaves; a list ``L`` adds ``L.len`` and its items ``L.0``, ``L.1``...; ``None``
leaves no line. Values: integers in decimal, booleans ``true``/``false``,
floats by ``repr``, strings as they are with ``\\``, newline and carriage
return escaped as ``\\\\``, ``\\n`` and ``\\r``. The digest line lets the
library refuse a companion that no longer matches its YAML; the body line
(the length of everything after it and its CRC-32, ``zlib.crc32``) one that was
cut short or edited. Each kind has a size bound the library holds it to
(``mokka.core.names``); ``render`` refuses to write past it.

Pure: the callers write (``atomic_write``), always together with the YAML.
"""

from __future__ import annotations

import re
import zlib

from mokka.core import names

FORMAT_VERSION = 2
KIND_STATE = names.STATE_COMPANION_KIND
KIND_OVERRIDES = names.OVERRIDES_COMPANION_KIND
KIND_EVENTS = names.XID_EVENTS_KIND

#: Each kind's (bytes, body lines) bound: the library refuses a larger companion unread.
BOUNDS = {
    KIND_STATE: (names.MAX_STATE_COMPANION_BYTES, names.MAX_STATE_COMPANION_LINES),
    KIND_OVERRIDES: (names.MAX_OVERRIDES_COMPANION_BYTES, names.MAX_OVERRIDES_COMPANION_LINES),
    KIND_EVENTS: (names.MAX_EVENTS_COMPANION_BYTES, names.MAX_EVENTS_COMPANION_LINES),
}
#: What may not be in a key (a space ends it; control characters and DEL are refused).
_BAD_KEY_CHARS = frozenset(" \x7f" + "".join(map(chr, range(32))))


class CompanionError(ValueError):
    """A document that has no companion the library would take: too large, or a key
    or value the format cannot hold."""


def companion_path(yaml_path: str) -> str:
    """``…/config.yaml`` -> ``…/config.nvml`` (any suffix after the last dot)."""
    head, _, _ = yaml_path.rpartition(".")       # no dot: head is ""
    slash = yaml_path.rfind("/")
    base = head if len(head) > slash + 1 else yaml_path
    return base + names.NVML_COMPANION_SUFFIX


def _scalar(value) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def value_of(companion: bytes, key: str) -> str | None:
    """``key``'s value in a companion's bytes, a string as ``_scalar`` wrote it, or None."""
    prefix = key.encode() + b" "
    for line in companion.splitlines():
        if line.startswith(prefix):
            raw = line[len(prefix):].decode(errors="replace")
            return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), raw)
    return None


class _Budget:
    """Bytes a document may still compile to: walking stops at the bound, before a
    document whose values repeat (one long name in every entry) fills memory."""

    def __init__(self, most: int | None):
        self.left = most

    def take(self, key: str, value: str) -> None:
        if self.left is not None:
            self.left -= len(key) + len(value) + 2
            if self.left < 0:
                raise CompanionError("compiles to more bytes than the library reads of a companion")


def _walk(prefix: str, value, out: list[tuple[str, str]], budget: _Budget) -> None:
    if value is None:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            key = str(key).replace(" ", "_")
            _walk(f"{prefix}.{key}" if prefix else key, item, out, budget)
    elif isinstance(value, (list, tuple)):
        out.append((f"{prefix}.{names.COMPANION_LEN_KEY}", str(len(value))))
        budget.take(*out[-1])
        for n, item in enumerate(value):
            _walk(f"{prefix}.{n}", item, out, budget)
    else:
        out.append((prefix, _scalar(value)))
        budget.take(*out[-1])


def flatten(doc, most_bytes: int | None = None) -> list[tuple[str, str]]:
    """The (key, value) pairs of a document, sorted by key as UTF-8 bytes;
    CompanionError once they pass ``most_bytes``."""
    pairs: list[tuple[str, str]] = []
    _walk("", doc, pairs, _Budget(most_bytes))
    pairs.sort(key=lambda kv: kv[0].encode())
    return pairs


def _line(key: str, value: str) -> bytes:
    if not key or _BAD_KEY_CHARS.intersection(key) or "\0" in value:
        raise CompanionError(f"{key!r}: a key must be one token of printable characters, "
                             "and no value may hold a NUL")
    return f"{key} {value}\n".encode()


def render(kind: str, digest: str, body) -> bytes:
    """The companion of kind ``kind`` for a YAML of digest ``digest`` ("sha256:..."),
    holding the pairs of ``body``; CompanionError past the kind's bounds."""
    most_bytes, most_lines = BOUNDS[kind]
    try:
        pairs = flatten(body, most_bytes)
    except CompanionError:
        raise CompanionError(f"compiles to more than the {most_bytes} bytes the library reads "
                             f"of a {kind} companion") from None
    if len(pairs) > most_lines:
        raise CompanionError(f"compiles to {len(pairs)} lines, more than the {most_lines} the "
                             f"library reads of a {kind} companion")
    data = b"".join([_line(key, value) for key, value in pairs])
    head = (f"# mokka-nvml {kind} {FORMAT_VERSION}\ndigest {digest}\n"
            f"body {len(data)} crc32:{zlib.crc32(data):08x}\n").encode()
    if len(head) + len(data) > most_bytes:
        raise CompanionError(f"compiles to more than the {most_bytes} bytes the library reads "
                             f"of a {kind} companion")
    return head + data


def state_companion(state: dict) -> bytes:
    """The compiled engine state: ``gpu.<n>.…`` per GPU, plus the node-wide blocks."""
    body = {key: value for key, value in state.items() if key not in ("gpus", "profile")}
    body[names.COMPANION_GPU_LIST] = state.get("gpus") or []
    body["profile_source"] = (state.get("profile") or {}).get("source")
    return render(KIND_STATE, (state.get("profile") or {}).get("digest", ""), body)


def overrides_companion(doc: dict | None, yaml_bytes: bytes) -> bytes:
    """The fields of one overrides document (a GPU's, or every GPU's: mokka.engine.overrides)."""
    from mokka.core.profile import digest

    return render(KIND_OVERRIDES, digest(yaml_bytes), doc if isinstance(doc, dict) else {})

