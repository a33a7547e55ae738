"""One table of engine cases: what a process that loads the mock NVML library sees.

Each Case names a profile (and the topology document and node name its state
is compiled with), the environment a process starts with and the files around
it (device nodes, the fabricmanager marker, an overrides file), and what that process must see: the visible GPUs as
(uuid, index, physical index), their fabric identity and, where an override
renames one, their names. Expected values are literals on purpose.

``stage(case, root)`` writes the files into a fresh directory and returns the
environment; tests/native/test_engine_corpus.py runs the mock libnvidia-ml.so.1 over it,
and tests/native/test_nvidia_smi_agree.py NVIDIA's nvidia-smi and ours.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from mokka.core import names

H100 = tuple(f"GPU-01000100-0000-0000-0000-00000000000{n}" for n in range(8))
A100 = tuple(f"GPU-12345678-1234-1234-1234-12345678000{n}" for n in range(8))
GB300 = tuple(f"GPU-b300b300-0000-0000-0000-00000000000{n}" for n in range(8))

#: (state, clique id, cluster UUID) of the profiles' own fabric blocks.
PROFILE_FABRIC = ("completed", 0, "00000000-0000-0000-0000-000000000001")
RACK_A = "00000000-0000-0000-0000-0000000000cd"

TOPOLOGY = """version: 1
domains:
  - name: rack-a
    uuid: "00000000-0000-0000-0000-0000000000CD"
    cliques:
      - id: 0
        nodes: [worker-1, worker-2]
      - id: 7
        nodes: [worker-3]
"""

#: Overrides as the documents of their scopes: None is every GPU (all.yaml), N the
#: GPU of physical index N (gpuN.yaml).
OVERRIDES_CLIQUES = {
    None: "fabric:\n  clique_id: 9\n",
    2: "fabric:\n  clique_id: 4\n",
    5: "name: Renamed GPU\n",
}

OVERRIDES_READINGS = {
    None: "utilization:\n  memory: 50\n",
    5: "thermal:\n  temperature_gpu_c: 77\nutilization:\n  gpu: 99\n",
}

#: The same overrides written by hand in flow style, with an anchor, and as JSON:
#: every valid YAML reads the same once compiled.
OVERRIDES_READINGS_BY_HAND = {
    None: "{utilization: {memory: 50}}\n",
    5: "base: &hot {temperature_gpu_c: 77}\nthermal: *hot\nutilization: {gpu: 99}\n",
}
OVERRIDES_CLIQUES_JSON = {
    None: '{"fabric": {"clique_id": 9}}\n',
    2: '{"fabric": {"clique_id": 4}}\n',
    5: '{"name": "Renamed GPU"}\n',
}


@dataclass(frozen=True)
class Case:
    id: str
    profile: str
    #: (uuid, visible index, physical index) of every GPU the process sees.
    visible: tuple
    env: dict = field(default_factory=dict)
    dev_nodes: tuple = ()               # minors of /dev/nvidia<n> under MOCK_NVML_DEV_ROOT
    topology: str | None = None         # a topology document the state is compiled with
    node_name: str = ""                 # the node name it is compiled for
    fabricmanager_ready: bool | None = None   # None: MOCK_FABRICMANAGER_STATE_DIR unset
    overrides: dict | None = None       # {scope: YAML text} in the overrides directory
    #: the fabric of every visible GPU: None (no fabric), one (state, clique, cluster)
    #: for all, or {visible index: (state, clique, cluster)}.
    fabric: object = None
    names: dict = field(default_factory=dict)   # {visible index: name} to check
    #: {visible index: (temperature C, power draw mW, utilization.gpu, utilization.memory)}
    #: to check; give such a case MOCK_NVML_CLOCK, as readings move (tests/corpus/dynamic_cases.py).
    readings: dict = field(default_factory=dict)


def _seen(uuids, *physical):
    return tuple((uuids[p], i, p) for i, p in enumerate(physical))


ALL8 = tuple(range(8))

CASES = [
    Case("no variable, no device nodes: every GPU", "h100", _seen(H100, *ALL8), fabric=PROFILE_FABRIC),
    Case("empty value falls back to device nodes", "h100", _seen(H100, 2, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: ""}, dev_nodes=(2, 5), fabric=PROFILE_FABRIC),
    Case("whitespace value falls back to device nodes", "h100", _seen(H100, 1),
         env={names.ENV_NVML_VISIBLE_DEVICES: "  "}, dev_nodes=(1,), fabric=PROFILE_FABRIC),
    Case("none hides every GPU", "h100", (), env={names.ENV_NVML_VISIBLE_DEVICES: "none"}),
    Case("void hides every GPU", "h100", (), env={names.ENV_NVML_VISIBLE_DEVICES: "void"}),
    Case("NONE is case-insensitive", "a100", (), env={names.ENV_NVML_VISIBLE_DEVICES: "NONE"}),
    Case("VOID is case-insensitive", "a100", (), env={names.ENV_NVML_VISIBLE_DEVICES: "VOID"},
         dev_nodes=ALL8),
    Case("an empty list entry selects nothing: '1,' is GPU 1", "a100", _seen(A100, 1),
         env={names.ENV_NVML_VISIBLE_DEVICES: "1,"}),
    Case("all wins over a partial device tree", "a100", _seen(A100, *ALL8),
         env={names.ENV_NVML_VISIBLE_DEVICES: "all"}, dev_nodes=(3,)),
    Case("index list renumbers from 0", "a100", _seen(A100, 1, 3),
         env={names.ENV_NVML_VISIBLE_DEVICES: "1,3"}),
    Case("list order does not reorder GPUs", "a100", _seen(A100, 1, 3),
         env={names.ENV_NVML_VISIBLE_DEVICES: "3,1"}),
    Case("a repeated index is one GPU", "a100", _seen(A100, 0),
         env={names.ENV_NVML_VISIBLE_DEVICES: "0,0"}),
    Case("index and lower-case UUID mixed, spaces ignored", "h100", _seen(H100, 2, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: " 2 , gpu-01000100-0000-0000-0000-000000000005"},
         fabric=PROFILE_FABRIC),
    Case("a UUID prefix selects every GPU it starts", "a100", _seen(A100, *ALL8),
         env={names.ENV_NVML_VISIBLE_DEVICES: "GPU-12345678-1234"}),
    Case("leading zeros are the same index", "a100", _seen(A100, 7),
         env={names.ENV_NVML_VISIBLE_DEVICES: "007"}),
    Case("ten digits with leading zeros are still an index", "a100", _seen(A100, 3),
         env={names.ENV_NVML_VISIBLE_DEVICES: "0000000003"}),
    Case("an index past 32 or 64 bits is no GPU, not one it wraps to (3)", "a100", (),
         env={names.ENV_NVML_VISIBLE_DEVICES: "4294967299,18446744073709551619,000018446744073709551619"}),
    Case("a blank before a comma is not part of the index", "a100", _seen(A100, 1, 3),
         env={names.ENV_NVML_VISIBLE_DEVICES: "3 ,1"}),
    Case("every blank Python's strip takes (tab to CR, 0x1c to 0x1f) is no part of an item", "a100",
         _seen(A100, 2, 4, 6), env={names.ENV_NVML_VISIBLE_DEVICES: "\x1c2\r,\t4\x1f,\x0b6\x0c"}),
    Case("unknown index, UUID and words hide those", "a100", (),
         env={names.ENV_NVML_VISIBLE_DEVICES: "8,GPU-ffff,abc,-1"}),
    Case("a partial device tree shows only those", "h100", _seen(H100, 0, 7),
         dev_nodes=(0, 7), fabric=PROFILE_FABRIC),
    Case("a full device tree shows every GPU", "a100", _seen(A100, *ALL8), dev_nodes=ALL8),
    Case("a node past the GPUs is none of them: nvidia1-nvidia8 of 8 GPUs show 1-7", "a100",
         _seen(A100, 1, 2, 3, 4, 5, 6, 7), dev_nodes=(1, 2, 3, 4, 5, 6, 7, 8)),
    Case("topology gives this node its clique and domain", "gb300", _seen(GB300, *ALL8),
         node_name="worker-3", topology=TOPOLOGY, fabric=("completed", 7, RACK_A)),
    Case("topology for a node in clique 0", "gb300", _seen(GB300, 0, 1),
         env={names.ENV_NVML_VISIBLE_DEVICES: "0,1"}, node_name="worker-1",
         topology=TOPOLOGY, fabric=("completed", 0, RACK_A)),
    Case("topology without this node keeps the profile", "gb300", _seen(GB300, *ALL8),
         node_name="worker-9", topology=TOPOLOGY, fabric=PROFILE_FABRIC),
    Case("topology compiled without a node name is ignored", "gb300", _seen(GB300, *ALL8),
         topology=TOPOLOGY, fabric=PROFILE_FABRIC),
    Case("topology never adds fabric to a profile without it", "a100", _seen(A100, *ALL8),
         node_name="worker-3", topology=TOPOLOGY),
    Case("the process's NODE_NAME and a document it names change nothing: the node compiled is shown",
         "gb300", _seen(GB300, *ALL8), node_name="worker-3", topology=TOPOLOGY,
         env={names.ENV_NODE_NAME: "worker-1", names.ENV_TOPOLOGY_CONFIG: "@topology"},
         fabric=("completed", 7, RACK_A)),
    Case("a process's topology document is not read for a state compiled without one", "gb300",
         _seen(GB300, *ALL8), env={names.ENV_NODE_NAME: "worker-3", names.ENV_TOPOLOGY_CONFIG: "@topology"},
         fabric=PROFILE_FABRIC),
    Case("fabric auto waits for the fabricmanager marker", "h100", _seen(H100, *ALL8),
         fabricmanager_ready=False, fabric=("in_progress", 0, "00000000-0000-0000-0000-000000000001")),
    Case("fabric auto is completed with the marker", "h100", _seen(H100, *ALL8),
         fabricmanager_ready=True, fabric=PROFILE_FABRIC),
    Case("overrides: devices by physical index beat all", "h100", _seen(H100, 2, 3, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: "2,3,5"}, overrides=OVERRIDES_CLIQUES,
         fabric={0: ("completed", 4, "00000000-0000-0000-0000-000000000001"),
                 1: ("completed", 9, "00000000-0000-0000-0000-000000000001"),
                 2: ("completed", 9, "00000000-0000-0000-0000-000000000001")},
         names={0: "NVIDIA H100 80GB HBM3", 2: "Renamed GPU"}),
    Case("overrides win over the topology document", "gb300", _seen(GB300, 2),
         env={names.ENV_NVML_VISIBLE_DEVICES: "2"}, node_name="worker-3",
         topology=TOPOLOGY, overrides=OVERRIDES_CLIQUES, fabric=("completed", 4, RACK_A)),
    Case("moving readings: the pinned second and the physical GPU draw them", "h100", _seen(H100, 2, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: "2,5", names.ENV_NVML_CLOCK: "1700000000"},
         fabric=PROFILE_FABRIC, readings={0: (34, 120000, 40, 12), 1: (34, 120000, 40, 18)}),
    Case("moving readings: another second, other values", "h100", _seen(H100, 2, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: "2,5", names.ENV_NVML_CLOCK: "1700000001"},
         fabric=PROFILE_FABRIC, readings={0: (34, 120000, 33, 15), 1: (34, 120000, 17, 18)}),
    Case("overrides win over moving readings; what they leave out moves", "h100", _seen(H100, 2, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: "2,5", names.ENV_NVML_CLOCK: "1700000000"},
         overrides=OVERRIDES_READINGS, fabric=PROFILE_FABRIC,
         readings={0: (34, 120000, 40, 50), 1: (77, 120000, 99, 50)}),
    Case("overrides written by hand in flow style and with an anchor read the same", "h100",
         _seen(H100, 2, 5), env={names.ENV_NVML_VISIBLE_DEVICES: "2,5", names.ENV_NVML_CLOCK: "1700000000"},
         overrides=OVERRIDES_READINGS_BY_HAND, fabric=PROFILE_FABRIC,
         readings={0: (34, 120000, 40, 50), 1: (77, 120000, 99, 50)}),
    Case("overrides written by hand as JSON read the same", "h100", _seen(H100, 2, 3, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: "2,3,5"}, overrides=OVERRIDES_CLIQUES_JSON,
         fabric={0: ("completed", 4, "00000000-0000-0000-0000-000000000001"),
                 1: ("completed", 9, "00000000-0000-0000-0000-000000000001"),
                 2: ("completed", 9, "00000000-0000-0000-0000-000000000001")},
         names={0: "NVIDIA H100 80GB HBM3", 2: "Renamed GPU"}),
    Case("a GPU's overrides follow it when another is hidden", "h100", _seen(H100, 5),
         env={names.ENV_NVML_VISIBLE_DEVICES: "5"}, overrides=OVERRIDES_CLIQUES,
         fabric=("completed", 9, "00000000-0000-0000-0000-000000000001"), names={0: "Renamed GPU"}),
]

IDS = [c.id for c in CASES]


def fabric_of(case: Case, index: int):
    """The expected (state, clique, cluster) of visible GPU `index`, or None."""
    if isinstance(case.fabric, dict):
        return case.fabric.get(index)
    return case.fabric


def stage(case: Case, root: str) -> dict:
    """Write the case's files under root; return the environment a process gets."""
    from mokka.core import compile as comp
    from mokka.engine import flatstate
    from mokka.core import profile as prof

    config_dir = os.path.join(root, "config")
    dev_root = os.path.join(root, "devroot")
    os.makedirs(os.path.join(dev_root, "dev"), exist_ok=True)
    os.makedirs(config_dir, exist_ok=True)
    from mokka.core import yamlio

    loaded = prof.load(case.profile)
    doc = yamlio.safe_load(case.topology) if case.topology is not None else None
    state = comp.compile_profile(loaded, doc, case.node_name)
    config = os.path.join(config_dir, names.PROFILE_FILE)
    _write(config, loaded.text)
    _write(flatstate.companion_path(config), flatstate.state_companion(state))
    for minor in case.dev_nodes:
        _write(os.path.join(dev_root, "dev", names.gpu_node_name(minor)), b"")
    env = {names.ENV_NVML_CONFIG: config, names.ENV_DEV_ROOT: dev_root}
    if case.fabricmanager_ready is not None:
        fm = os.path.join(root, "fabricmanager")
        os.makedirs(fm, exist_ok=True)
        if case.fabricmanager_ready:
            _write(os.path.join(fm, names.FABRICMANAGER_READY), b"")
        env[names.ENV_FABRICMANAGER_STATE_DIR] = fm
    if case.overrides is not None:
        write_overrides(config_dir, case.overrides)
    env.update(case.env)
    if env.get(names.ENV_TOPOLOGY_CONFIG) == "@topology":
        env[names.ENV_TOPOLOGY_CONFIG] = write_old_topology(os.path.join(root, names.TOPOLOGY_FILE))
    return env


def write_old_topology(path: str) -> str:
    """TOPOLOGY (worker-1 in clique 0, worker-3 in clique 7) and the ``topology.nvml`` companion
    the library once read and applied for the process's NODE_NAME, byte for byte as it was
    compiled: a library that still derived the overlay would show it."""
    import hashlib
    import zlib

    text = TOPOLOGY.encode()
    body = "".join(f"node.{node}.{key} {value}\n" for node, clique in
                   (("worker-1", 0), ("worker-2", 0), ("worker-3", 7))
                   for key, value in (("clique_id", clique), ("cluster_uuid", RACK_A),
                                      ("domain", "rack-a"))).encode()
    head = (f"# mokka-nvml topology 2\ndigest sha256:{hashlib.sha256(text).hexdigest()}\n"
            f"body {len(body)} crc32:{zlib.crc32(body):08x}\n").encode()
    _write(path, text)
    _write(path[:-len(".yaml")] + ".nvml", head + body)
    return path


def overrides_dir(config_dir: str) -> str:
    return os.path.join(config_dir, names.OVERRIDES_DIR)


def write_overrides(config_dir: str, scopes: dict) -> None:
    """The documents of ``scopes`` ({None or physical index: YAML text}) and their
    companions in the overrides directory, through the product's one writer."""
    from mokka.engine import overrides

    os.makedirs(overrides_dir(config_dir), exist_ok=True)
    for scope, text in scopes.items():
        overrides.write_text(overrides.scope_path(overrides_dir(config_dir), scope), text.encode())


def _write(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
