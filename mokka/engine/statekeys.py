"""The compiled state, declared as the profile is, and its keys as its companion spells them.

``GPU`` and ``STATE`` declare what ``mokka.core.compile`` returns with the specs of
``mokka.core.schema``: a compiled GPU is the profile's device (``schema.DEVICE_ENTRY``)
plus what compilation fills in; the tests hold compile to it.

The state companion (``mokka.engine.flatstate``) holds a line per scalar of the
compiled state: the node-wide blocks at the top (``system.driver_version``),
each GPU under ``gpu.<physical index>.`` (``gpu.0.thermal.temperature_gpu_c``),
a list ``L`` as ``L.len`` and its items ``L.0``, ``L.1``... The overrides give
a GPU the same keys. ``gpu_keys`` and ``node_keys`` are the paths of the two
declarations; ``native/nvml/gen_keys.py`` turns them into the C library's
macros, so the library can only name a key declared here. A key is a tuple of
names; ``ITEM`` stands for a list's item number.

Pure: a function of the declarations only.
"""

from __future__ import annotations

from typing import Iterator

from mokka.core import names, schema
from mokka.core.schema import Int, List, Map, Str

_PROFILE = schema.PROFILE.fields
_NVLINK = _PROFILE["nvlink"].fields
_ROOT_COMPLEX = _PROFILE["pcie_topology"].fields["root_complexes"].item.fields
_FABRIC = schema.DEVICE_FIELDS["fabric"].fields

#: The profile's MIG fields a compiled GPU does not hold: its named layouts (compiled to
#: ``boot``) and its partition table (one of the state's ``mig_tables``).
_MIG_NOT_PER_GPU = ("layouts", "gpu_instance_profiles")

#: A compiled GPU: the profile's device fields, the PCI address as sysfs spells it and
#: as numbers, its board id, root complex and NUMA placement, and its NVLinks.
GPU = Map({
    **schema.DEVICE_ENTRY.fields,
    "pci": Map({**schema.DEVICE_FIELDS["pci"].fields, "bdf": _ROOT_COMPLEX["devices"].item,
                **schema.ints("domain bus device function vendor_id pci_device subsystem_vendor "
                              "subsystem_device")}),
    "board_id": Int(),
    "root_complex": _ROOT_COMPLEX["id"],
    "numa_node": _ROOT_COMPLEX["numa_node"],
    "cpu_affinity": _ROOT_COMPLEX["cpu_affinity"],
    "nvlink_links": _NVLINK["links"],
    # Which of the node's partition tables is the GPU's (``table``: an item of the state's
    # ``mig_tables``), and in place of the named layouts the GPU instances the chosen one
    # creates at boot, with their placements (mokka.core.mig.plan_layout).
    "mig": Map({**{k: v for k, v in schema.MIG.fields.items() if k not in _MIG_NOT_PER_GPU},
                "table": Int(maximum=names.MAX_GPUS - 1),
                "boot": List(Map(schema.ints("profile_id placement_start placement_size")),
                             max_len=8)}),
}, required=schema.DEVICE_ENTRY.required)

#: The compiled state ``compile.compile_profile`` returns.
STATE = Map({
    "schema_version": Int(),
    "generator": Str(),
    "profile": Map({"source": schema.Any(), "digest": Str()}),
    "node_name": Str(),
    "system": _PROFILE["system"],
    "gpu_count": Int(maximum=names.MAX_GPUS),
    "gpus": List(GPU, max_len=names.MAX_GPUS),
    # Each distinct partition table once, however many GPUs of the board the node has.
    "mig_tables": List(Map({"gpu_instance_profiles": schema.MIG.fields["gpu_instance_profiles"]}),
                       max_len=names.MAX_GPUS),
    "nvlink": Map({key: _NVLINK[key] for key in ("version", "links_per_gpu", "bandwidth_per_link_mbps",
                                                 "c2c_enabled", "switches")}),
    "pcie_topology": _PROFILE["pcie_topology"],
    "infiniband": _PROFILE["infiniband"],
    "platform": _PROFILE["platform"],
    "topology": Map({"node_name": Str(), "domain": Str(), "clique_id": Int(),
                     "cluster_uuid": _FABRIC["cluster_uuid"]}),
})

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


def lists(spec: schema.Spec, path: Key = ()) -> Iterator[tuple[Key, int]]:
    """Every list at or below ``spec``: its key and the most items it may hold (its
    ``max_len``), which the library's companion reader holds every document to."""
    if isinstance(spec, schema.Map):
        for name, field in spec.fields.items():
            yield from lists(field, path + (name,))
    elif isinstance(spec, schema.List):
        yield path, spec.max_len
        yield from lists(spec.item, path + (ITEM,))


def gpu_keys() -> list[Key]:
    """A GPU's keys, relative to ``gpu.<physical index>.`` (and to the overrides' GPU)."""
    return list(walk(GPU))


def mig_table_keys() -> list[Key]:
    """A MIG partition table's keys, relative to ``mig_tables.<n>.``."""
    return list(walk(STATE.fields["mig_tables"].item))


def _node_wide() -> tuple[Map, List]:
    """The state's node-wide blocks, and its GPU list as a list of opaque items."""
    blocks = Map({k: v for k, v in STATE.fields.items() if k not in _NOT_NODE_WIDE})
    return blocks, List(schema.Any(), max_len=STATE.fields["gpus"].max_len)


def node_keys() -> list[Key]:
    """The node-wide keys: the state's blocks, the GPU list's own keys, the profile source."""
    blocks, gpus = _node_wide()
    return [*walk(blocks), *walk(gpus, (names.COMPANION_GPU_LIST,)), _PROFILE_SOURCE]


def gpu_lists() -> list[tuple[Key, int]]:
    """A GPU's lists (relative, as gpu_keys) and their bounds."""
    return list(lists(GPU))


def node_lists() -> list[tuple[Key, int]]:
    """The node-wide lists, the GPU list included, and their bounds."""
    blocks, gpus = _node_wide()
    return [*lists(blocks), *lists(gpus, (names.COMPANION_GPU_LIST,))]


def text(key: Key, item: str = "%u") -> str:
    """The dotted key, with ``item`` for each list item number."""
    return ".".join(item if part is ITEM else part for part in key)
