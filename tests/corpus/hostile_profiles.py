"""A generated corpus of hostile profiles (hypothesis), shared by the core and agent tests.

Each example starts from a small valid profile and applies one to three edits at field paths
taken from the schema itself (plus unknown keys): a hostile value (wrong type, huge or
negative number, NaN, text with control characters, nested lists and mappings), a deletion,
or an alias of another block. It is then written as block YAML, flow YAML or JSON.
"""

from __future__ import annotations

import copy
import json
import math

import yaml
from hypothesis import strategies as st

from mokka.core import schema

BASE = {
    "version": "1.0",
    "system": {"driver_version": "550.163.01", "cuda_version": "12.4"},
    "device_defaults": {
        "name": "NVIDIA Test GPU", "architecture": "ampere",
        "memory": {"total_bytes": 1000, "reserved_bytes": 100},
        "pci": {"device_id": 0x20B010DE},
        "fabric": {"state": "completed", "clique_id": 1},
    },
    "devices": [
        {"index": 0, "uuid": "GPU-12345678-1234-1234-1234-123456780000",
         "pci": {"bus_id": "0000:07:00.0"}},
        {"index": 1, "uuid": "GPU-12345678-1234-1234-1234-123456780001",
         "pci": {"bus_id": "0000:0F:00.0"}},
    ],
    "nvlink": {"links_per_gpu": 2, "switches": [{"bdf": "0000:01:00.0", "uuid": "sw0"}]},
    "pcie_topology": {"root_complexes": [{"id": "pci0000:00", "numa_node": 0,
                                          "devices": ["0000:07:00.0"]}]},
}


def schema_paths(spec=schema.PROFILE, prefix=()) -> list[tuple]:
    """Every field path the schema declares; list items as index 0."""
    out = []
    if isinstance(spec, schema.Map):
        for key, sub in spec.fields.items():
            out.append(prefix + (key,))
            out += schema_paths(sub, prefix + (key,))
    elif isinstance(spec, schema.List):
        out += schema_paths(spec.item, prefix + (0,))
    return out


PATHS = schema_paths() + [("devices", 1, "index"), ("devices", 1, "uuid"), ("future_block",),
                          ("device_defaults", "future_field"), ("system", "future", "x")]

_CONTROL_TEXT = st.text(alphabet=st.sampled_from("ab0:.-/\n\r\t\x00\x7f é"), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
            | st.sampled_from([0, -1, 2**32, 2**63, 2**64, 0x1FFFFFFFF, 65, 255])
            | st.floats(allow_nan=True, allow_infinity=True) | _CONTROL_TEXT
            | st.sampled_from(["", "0x20B010DE", "pci0000:00\n", "GPU-../x", "..", "N/A",
                               "0000:07:00.0", "completed", "lost", "1e30"]))
VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)


def set_path(doc: dict, path: tuple, value) -> None:
    node = doc
    for key, nxt in zip(path[:-1], path[1:]):
        want = [] if isinstance(nxt, int) else {}
        if isinstance(node, list):
            while len(node) <= key:
                node.append({})
            if not isinstance(node[key], type(want)):   # an earlier edit may have left a scalar or the other kind
                node[key] = want
            node = node[key]
        else:
            if not isinstance(node.get(key), type(want)):
                node[key] = want
            node = node[key]
    last = path[-1]
    if isinstance(node, list):
        while len(node) <= last:
            node.append({})
        if value is ...:
            del node[last]
        else:
            node[last] = value
    elif value is ...:
        node.pop(last, None)
    else:
        node[last] = value


EDIT = st.tuples(st.sampled_from(PATHS), VALUES | st.just(...))


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


@st.composite
def hostile_profiles(draw) -> str:
    doc = copy.deepcopy(BASE)
    for path, value in draw(st.lists(EDIT, min_size=1, max_size=3)):
        set_path(doc, path, value)
    form = draw(st.sampled_from(["block", "flow", "json"]))
    if form == "json" and _finite(doc):
        return json.dumps(doc)
    return yaml.safe_dump(doc, default_flow_style=(form == "flow"), allow_unicode=True)
