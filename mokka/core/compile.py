"""Compile a profile into the state the mock NVML library reads (as its companion).

The state is one document (schema ``names.STATE_SCHEMA_VERSION``): the node
agent and the CDI renderer use it as a dict, mokka.engine.flatstate writes it as
the companion the mock NVML library reads, ``mokka compile`` prints it as JSON.
Compilation is pure and deterministic: the same profile, topology and node
name give byte-identical output.

Each ``gpus[i]`` is the merged device of the profile (the Go Mokka field names
and nesting, so a reader can look up any profile field) plus normalized fields
this module fills in: ``index``, ``uuid``, ``minor_number``, ``pci`` (``bus_id``
as nvidia-smi prints it, ``bdf`` as sysfs names it, integer ids), ``numa_node``,
``root_complex``, ``cpu_affinity``, ``board_id``, ``nvlink_links``, a
normalized ``fabric`` (absent when the profile has none) and the ``cuda`` block
completed from the compute capability (mokka.core.cudaboard); its MIG partition
table is one of the state's ``mig_tables``, shared by the GPUs of one board (the GPU
keeps ``mig.table``, its number). ``mokka.engine.statekeys``
declares all of it, as ``mokka.core.schema`` declares the profile.
"""

from __future__ import annotations

import json

from mokka import __version__
from mokka.core import cudaboard, identity, kernelmodules, mig, names
from mokka.core.profile import Profile, copy_tree, parse_bus_id, _as_int
from mokka.core import topology as topo

NVIDIA_VENDOR = 0x10DE
#: The interrupt of GPU 0 when the profile gives none, the next GPU's one more: the GPU's
#: MSI-X vector, which on a multi-socket HGX node the kernel numbers in the hundreds.
FIRST_IRQ = 300

IB_DEFAULTS = {
    "enabled": False, "hca_type": "MT4129", "fw_version": "28.39.2048", "hw_rev": "0x0",
    "board_id": "MT_0000000838", "node_desc_template": "{node_name} mlx5_{idx}",
    "link_layer": "InfiniBand", "rate_gbps": 400, "port_state": "ACTIVE",
    "phys_state": "LinkUp", "hcas_per_gpu": 1, "hca_count": 0, "guid_prefix": "a088c20300ab",
}



def compile_profile(profile: Profile, topology_doc: dict | None = None,
                    node_name: str = "", identity_node: str = "") -> dict:
    """``node_name`` places the node in ``topology_doc``; ``identity_node`` (the name a
    user gave the node: the agent's --node-name) gives the GPUs that node's identities
    (mokka.core.identity; "": the profile's own)."""
    doc = profile.doc
    system = doc.get("system") or {}
    gpus = [copy_tree(d) for d in profile.devices]
    _fill_identity(gpus)
    roots = _root_complexes(doc.get("pcie_topology") or {}, gpus)
    nvlink = _nvlink(doc.get("nvlink") or {}, gpus)
    for gpu in gpus:
        gpu["fabric"] = _fabric(gpu.get("fabric"))
        if gpu["fabric"] is None:
            del gpu["fabric"]
        if isinstance(gpu.get("mig"), dict):
            gpu["mig"] = _mig(gpu["mig"])
        gpu["cuda"] = cudaboard.fill(gpu)
    if identity.per_node(system, identity_node):
        identity.apply(gpus, identity_node)     # before a topology document's cluster UUID
    mig_tables = share_mig_tables(gpus)
    state = {
        "schema_version": names.STATE_SCHEMA_VERSION,
        "generator": f"mokka {__version__}",
        "profile": {"source": profile.source, "digest": profile.digest},
        "node_name": node_name,
        "system": {
            "driver_version": str(system.get("driver_version", "")),
            "nvml_version": str(system.get("nvml_version") or ""),
            "cuda_version": str(system.get("cuda_version") or ""),
            "cuda_version_major": system.get("cuda_version_major"),
            "cuda_version_minor": system.get("cuda_version_minor"),
            "kernel_modules": list(kernelmodules.loaded(
                system.get("kernel_modules"), bool((doc.get("infiniband") or {}).get("enabled")))),
        },
        "gpu_count": len(gpus),
        "gpus": gpus,
        "mig_tables": mig_tables,
        "nvlink": nvlink,
        "pcie_topology": {"root_complexes": roots,
                          "cores_per_numa": (doc.get("pcie_topology") or {}).get("cores_per_numa")},
        "infiniband": _infiniband(doc.get("infiniband") or {}, len(gpus)),
        "platform": doc.get("platform"),
        "topology": None,
    }
    if topology_doc is not None:
        topo.apply(state, topology_doc, node_name)      # a node without a name is in no document
    return state


def dumps(state: dict) -> str:
    """The canonical, byte-stable serialization."""
    return json.dumps(state, sort_keys=True, indent=1, ensure_ascii=True) + "\n"


# --- pieces -------------------------------------------------------------------

def _fill_identity(gpus: list[dict]) -> None:
    """UUID, minor and bus id for every GPU; synthesize what the profile omits."""
    used_uuids = {g["uuid"].lower() for g in gpus if g.get("uuid")}
    used_minors = {g["minor_number"] for g in gpus if "minor_number" in g}
    used_bus = set()
    for g in gpus:
        bus = parse_bus_id((g.get("pci") or {}).get("bus_id"))
        if bus:
            used_bus.add(bus.bus)
    template = next((g["uuid"] for g in gpus if g.get("uuid")), None) \
        or "GPU-" + _hex_from_name(gpus[0].get("name", "mokka") if gpus else "mokka")
    next_bus = 1
    for g in gpus:
        idx = g["index"]
        if not g.get("uuid"):
            n = idx
            while True:
                candidate = f"{template[:-12]}{n:012x}"
                if candidate.lower() not in used_uuids:
                    break
                n += 0x1000
            g["uuid"] = candidate
            used_uuids.add(candidate.lower())
        if "minor_number" not in g:
            minor = idx
            while minor in used_minors:
                minor += 1
            g["minor_number"] = minor
            used_minors.add(minor)
        pci = dict(g.get("pci") or {})
        bus = parse_bus_id(pci.get("bus_id"))
        if bus is None:
            while next_bus in used_bus:
                next_bus += 1
            used_bus.add(next_bus)
            bus = parse_bus_id(f"00000000:{next_bus:02X}:00.0")
        device_id = _as_int(pci.get("device_id")) or 0
        subsystem_id = _as_int(pci.get("subsystem_id")) or 0
        pci.update({
            "bus_id": bus.nvml, "bdf": bus.sysfs, "domain": bus.domain, "bus": bus.bus,
            "device": bus.device, "function": bus.function,
            "device_id": device_id, "vendor_id": device_id & 0xFFFF or NVIDIA_VENDOR,
            "pci_device": device_id >> 16, "subsystem_id": subsystem_id,
            "subsystem_vendor": subsystem_id & 0xFFFF, "subsystem_device": subsystem_id >> 16,
            "irq": _as_int(pci.get("irq")) if _as_int(pci.get("irq")) is not None else FIRST_IRQ + idx,
        })
        g["pci"] = pci
        board_id = _as_int(g.get("board_id"))
        g["board_id"] = board_id if board_id is not None else \
            (bus.domain << 16) | (bus.bus << 8) | (bus.device << 3) | bus.function
        _fill_pcie(g)


def _fill_pcie(g: dict) -> None:
    """The device's and the host's maximum link generation are the pair's unless the
    profile says otherwise (a capture of a board in a slower slot)."""
    pcie = g.get("pcie")
    if isinstance(pcie, dict) and "max_link_gen" in pcie:
        g["pcie"] = {"gpu_max_link_gen": pcie["max_link_gen"], "max_host_link_gen": pcie["max_link_gen"],
                     **pcie}


def _hex_from_name(name: str) -> str:
    import hashlib
    h = hashlib.sha256(name.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _root_complexes(block: dict, gpus: list[dict]) -> list[dict]:
    roots = []
    for root in block.get("root_complexes") or []:
        devices = []
        for bus_id in root.get("devices") or []:
            bus = parse_bus_id(bus_id)
            if bus:
                devices.append(bus.sysfs)
        roots.append({"id": str(root.get("id")), "numa_node": int(root.get("numa_node") or 0),
                      "cpu_affinity": str(root.get("cpu_affinity") or ""), "devices": devices})
    if not roots:
        roots = [{"id": "pci0000:00", "numa_node": 0, "cpu_affinity": "", "devices": []}]
    placed = {bdf: r for r in roots for bdf in r["devices"]}
    spill = 0
    for g in gpus:
        root = placed.get(g["pci"]["bdf"])
        if root is None:                 # a GPU the topology does not list: round-robin
            root = roots[spill % len(roots)]
            spill += 1
            root["devices"].append(g["pci"]["bdf"])
        g["root_complex"] = root["id"]
        g["numa_node"] = root["numa_node"]
        g["cpu_affinity"] = root["cpu_affinity"]
    return roots


def _nvlink(block: dict, gpus: list[dict]) -> dict | None:
    if not block:
        for g in gpus:
            g["nvlink_links"] = []
        return None
    switches = [{"bdf": str(s.get("bdf", "")), "uuid": str(s.get("uuid", ""))}
                for s in block.get("switches") or []]
    per_gpu = int(block.get("links_per_gpu") or 0)
    defaults = block.get("defaults") or {}
    explicit = {int(d["index"]): d.get("links") or [] for d in block.get("device_links") or []}
    if block.get("links") and 0 not in explicit:
        explicit[0] = block["links"]            # a top-level list belongs to device 0
    for g in gpus:
        if g["index"] in explicit:
            links = [_link(l, n) for n, l in enumerate(explicit[g["index"]])]
        elif switches and per_gpu > 0:
            links = [{"link": n, "state": defaults.get("state", names.NVLINK_STATE_ACTIVE),
                      "remote_device_type": names.NVLINK_REMOTE_SWITCH,
                      "remote_pci_bus_id": switches[n % len(switches)]["bdf"],
                      "remote_index": n % len(switches)} for n in range(per_gpu)]
        else:
            links = []                          # no switches: no NV# at all (b200)
        g["nvlink_links"] = links
    return {"version": int(block.get("version") or 0), "links_per_gpu": per_gpu,
            "bandwidth_per_link_mbps": int(block.get("bandwidth_per_link_mbps") or 0),
            "c2c_enabled": bool(block.get("c2c_enabled")), "switches": switches}


def _link(link: dict, n: int) -> dict:
    return {"link": int(link.get("link", n)), "state": str(link.get("state", names.NVLINK_STATE_ACTIVE)),
            "remote_device_type": str(link.get("remote_device_type", names.NVLINK_REMOTE_SWITCH)),
            "remote_pci_bus_id": str(link.get("remote_pci_bus_id", "")),
            "remote_index": int(link.get("remote_index", 0))}


def normalize_cluster_uuid(value) -> str:
    text = str(value or "").strip().lower().replace("-", "")
    if len(text) != 32 or any(ch not in "0123456789abcdef" for ch in text):
        return str(value or "")
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _fabric(block) -> dict | None:
    if not isinstance(block, dict):
        return None
    out = copy_tree(block)
    out["cluster_uuid"] = normalize_cluster_uuid(block.get("cluster_uuid"))
    out["clique_id"] = int(block.get("clique_id") or 0)
    out["state"] = str(block.get("state") or names.FABRIC_STATE_DEFAULT).lower()
    summary = str(block.get("health_summary") or "auto").lower()
    out["health_summary"] = summary
    out["health"] = dict(block.get("health") or {})
    return out


def _mig(block: dict) -> dict:
    """The GPU's partition table and the GPU instances its layout creates at boot
    (``boot``, with placements; only with MIG mode enabled), in place of the named layouts."""
    out = {k: copy_tree(v) for k, v in block.items() if k != "layouts"}
    wanted: list = []
    if str(block.get("mode_current") or "").lower() == mig.ENABLED:     # every layout is named
        wanted = next((entry.get("gpu_instances") or [] for entry in block.get("layouts") or []
                       if entry.get("name") == block.get("layout")), [])
    out["boot"] = mig.plan_layout(block.get("gpu_instance_profiles") or [], wanted)
    return out


def share_mig_tables(gpus: list[dict]) -> list[dict]:
    """Each distinct partition table once, in the order GPUs first name it; a GPU keeps
    its table's number (``mig.table``). Eight or 64 GPUs of one board share one table,
    so the state the library reads grows with the GPUs' own fields only."""
    tables: list[dict] = []
    for gpu in gpus:
        block = gpu.get("mig")
        if not isinstance(block, dict) or "gpu_instance_profiles" not in block:
            continue
        table = {"gpu_instance_profiles": block.pop("gpu_instance_profiles")}
        if table not in tables:
            tables.append(table)
        block["table"] = tables.index(table)
    return tables


def _infiniband(block: dict, gpu_count: int) -> dict:
    ib = dict(IB_DEFAULTS)
    ib.update({k: v for k, v in block.items() if v is not None})
    ib["enabled"] = bool(ib.get("enabled"))
    if not ib["enabled"]:
        ib["hca_count"] = 0
    elif not ib.get("hca_count"):
        ib["hca_count"] = gpu_count * int(ib.get("hcas_per_gpu") or 1)
    return ib
