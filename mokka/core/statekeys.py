"""The keys of the compiled state, as its companion spells them.

The state companion (``mokka.core.flatstate``) holds a line per scalar of the
compiled state: the node-wide blocks at the top (``system.driver_version``),
each GPU under ``gpu.<physical index>.`` (``gpu.0.thermal.temperature_gpu_c``),
a list ``L`` as ``L.len`` and its items ``L.0``, ``L.1``... The overrides give
a GPU the same keys. Nothing here is declared anew: the keys are the paths of
``compile.GPU`` (the profile's device fields, ``schema.DEVICE_ENTRY``, plus
what compilation adds) and of ``compile.STATE``. ``native/nvml/gen_keys.py``
turns them into the C library's macros, so the library can only name a key
declared here.

A key is a tuple of names; ``ITEM`` stands for a list's item number.

Pure: a function of the declarations only.
"""

from __future__ import annotations

from typing import Iterator

from mokka.core import compile, names, schema

ITEM = None
Key = tuple

#: The state's parts the companion does not lay out as they are: its GPUs are
#: ``gpu.<n>.…`` (gpu_keys), its profile one line.
_NOT_NODE_WIDE = ("gpus", "profile")
#: ``profile.source`` as the companion spells it (flatstate.state_companion).
_PROFILE_SOURCE = ("profile_source",)


def walk(spec: schema.Spec, path: Key = ()) -> Iterator[Key]:
    """``path`` and every key below it: mappings and lists too (they are prefixes),
    a list's length and its items."""
    if path:
        yield path
    if isinstance(spec, schema.Map):
        for name, field in spec.fields.items():
            yield from walk(field, path + (name,))
    elif isinstance(spec, schema.List):
        yield path + (names.COMPANION_LEN_KEY,)
        yield from walk(spec.item, path + (ITEM,))


def gpu_keys() -> list[Key]:
    """A GPU's keys, relative to ``gpu.<physical index>.`` (and to the overrides' GPU)."""
    return list(walk(compile.GPU))


def node_keys() -> list[Key]:
    """The node-wide keys: the state's blocks, the GPU list's own keys, the profile source."""
    blocks = schema.Map({k: v for k, v in compile.STATE.fields.items() if k not in _NOT_NODE_WIDE})
    gpus = schema.List(schema.Any())
    return [*walk(blocks), *walk(gpus, (names.COMPANION_GPU_LIST,)), _PROFILE_SOURCE]


def text(key: Key, item: str = "%u") -> str:
    """The dotted key, with ``item`` for each list item number."""
    return ".".join(item if part is ITEM else part for part in key)
