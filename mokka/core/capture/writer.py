"""Records of a capture -> the profile's YAML text, with comments naming every guess.

What every GPU shares goes to ``device_defaults``; each ``devices`` entry holds
what differs, by the merge rules of mokka.core.profile (an identity string, a
field of ``pci`` or ``platform``, a whole replaced block, Mokka's own per-GPU
fields). A field the Go format cannot vary per GPU keeps the first GPU's value,
and a comment says which GPUs differ. Pure.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from mokka.core import profile as prof

#: Where a record's readings move with --dynamic: the dynamic block -> (block, field)s it replaces.
MOVED_BY = {"utilization": (("utilization", "gpu"), ("utilization", "memory")),
            "temperature": (("thermal", "temperature_gpu_c"),),
            "power": (("power", "current_draw_mw"),),
            "memory": (("memory", "used_bytes"),)}
PER_GPU_BLOCKS = set(prof.REPLACED_BLOCKS) | set(prof.MOKKA_DEVICE_FIELDS) | set(prof.IDENTITY_FIELDS)


@dataclass
class Profile:
    """The profile being written: its blocks, and the comment above each."""
    system: dict
    records: list
    blocks: dict = field(default_factory=dict)         # top-level blocks after the devices
    comments: dict = field(default_factory=dict)       # block or device field -> comment lines
    header: list = field(default_factory=list)


def move_readings(records: list, dynamic: dict) -> None:
    """Drop the static readings the moving pattern replaces."""
    for rec in records:
        for part, fields in MOVED_BY.items():
            if part in dynamic:
                for block, key in fields:
                    (rec.get(block) or {}).pop(key, None)


def split(records: list) -> tuple[dict, list, dict]:
    """(device_defaults, devices, {field: comment}) for the records of every GPU."""
    defaults: dict = {}
    devices = [{"index": i} for i in range(len(records))]
    notes: dict = {}
    keys = list(dict.fromkeys(k for rec in records for k in rec))
    for key in keys:
        values = [rec.get(key) for rec in records]
        if key in prof.PER_DEVICE_FIELDS:
            for dev, value in zip(devices, values):
                if value is not None:
                    dev[key] = value
            continue
        first = next(v for v in values if v is not None)
        defaults[key] = copy.deepcopy(first)
        if all(v == first for v in values):
            continue
        if key in prof.FIELD_MERGED_BLOCKS:
            shared = {k: v for k, v in first.items() if all((x or {}).get(k) == v for x in values)}
            defaults[key] = shared
            for dev, value in zip(devices, values):
                own = {k: v for k, v in (value or {}).items() if shared.get(k) != v}
                if own:
                    dev[key] = own
        elif key in PER_GPU_BLOCKS:
            for dev, value in zip(devices, values):
                if value is not None and value != first:
                    dev[key] = copy.deepcopy(value)
        else:
            differ = ", ".join(str(i) for i, v in enumerate(values) if v != first)
            notes[key] = [f"GPUs {differ} report another {key}: the Go format keeps one for every GPU"]
    return defaults, devices, notes


def render(p: Profile) -> str:
    defaults, devices, notes = split(p.records)
    p.comments.update(notes)
    out = [*(f"# {line}" for line in p.header), ""]
    out += _dump({"version": "1.0", "system": p.system})
    out += _commented(_dump({"device_defaults": defaults}), p.comments, "  ")
    out += _dump({"devices": devices})
    for name, block in p.blocks.items():
        out += [""] + [f"# {line}" for line in p.comments.get(name, [])] + _dump({name: block})
    return "\n".join(out).rstrip() + "\n"


def _dump(doc: dict) -> list[str]:
    import yaml

    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=100).splitlines()


def _commented(lines: list[str], comments: dict, indent: str) -> list[str]:
    """A comment line above each field of the block named in ``comments``."""
    out = []
    for line in lines:
        key = line[len(indent):].split(":", 1)[0] if line.startswith(indent) and line[len(indent)] != " " else None
        for text in comments.get(key, []) if key else []:
            out.append(f"{indent}# {text}")
        out.append(line)
    return out
