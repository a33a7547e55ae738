"""The CDI spec format (facts §4), both ways.

Writing: the specs of a compiled state as plain dicts (pure; the node agent's
cri simulator and ``mokka render-cdi`` write the files). A spec names only
host paths Mokka stages — a missing host path fails every container that uses
the spec — so there is no ``nvidia-cdi-hook`` hook (we ship none), no NVML
library mount unless the caller says a library is staged, and the proc hook
(the driver's /proc and /sys files, native/hooks/) only where it is staged.

Reading: any spec on the node, ours or another vendor's, into the container
edits of each fully qualified device (``read_spec``, ``device_edits``), for
runtimes that cannot take a CDI reference. A spec is host input: whatever it
holds that is not an edit is skipped, never followed or raised on.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from mokka.core import mig, names
from mokka.core.edits import Device, Hook, Mount
from mokka.core.mig import MigDevice
from mokka.core.overlay import Overlay

#: The file names a CDI spec directory's specs end with.
SPEC_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class CDIEdits:
    """The container edits of one CDI device (or a spec's common edits)."""
    env: tuple[str, ...] = ()                 # "KEY=value"
    devices: tuple[Device, ...] = ()
    mounts: tuple[Mount, ...] = ()
    hooks: tuple[Hook, ...] = ()              # createContainer hooks only


#: The one CDI hook name whose hooks a container gets from a spec's edits here: the
#: runtime runs them in the container's mount namespace before pivot_root.
CREATE_CONTAINER = "createContainer"


class UnreadableSpec(Exception):
    """A spec file that cannot be read or parsed; the message names why."""


def qualified_name(kind: str, name: str) -> str:
    """A device's fully qualified CDI name, ``vendor.com/class=name``."""
    return f"{kind}={name}"


def proc_hook(host: Overlay) -> Hook:
    """The proc hook as every GPU container gets it, through the NRI adjustment or a spec:
    the staged static helper, given the overlay's host path (it runs in the runtime's
    namespace, where host paths resolve)."""
    return Hook(path=host.proc_hook, args=(names.PROC_HOOK_FILE, host.root),
                timeout=names.PROC_HOOK_TIMEOUT_S)


def _hooks(host: Overlay, proc_hook_staged: bool) -> dict:
    """The spec's ``hooks`` edit: the proc hook where it is staged (a spec naming a missing
    hook would fail every container that uses it)."""
    if not proc_hook_staged:
        return {}
    hook = proc_hook(host)
    return {"hooks": [{"hookName": CREATE_CONTAINER, "path": hook.path, "args": list(hook.args),
                       "timeout": hook.timeout}]}


def _node(host: Overlay, name: str, major: int, minor: int) -> dict:
    return {"path": f"{names.CONTAINER_DEV_DIR}/{name}", "hostPath": host.control_node(name),
            "type": "c", "major": major, "minor": minor, "permissions": "rw"}


def gpu_nodes(state: dict, host: Overlay) -> list[dict]:
    return [_node(host, names.gpu_node_name(g["minor_number"]), names.NVIDIA_MAJOR, g["minor_number"])
            for g in state["gpus"]]


def control_nodes(host: Overlay) -> list[dict]:
    return [_node(host, name, major, minor) for name, major, minor in names.CONTROL_DEVICES]


def mig_management_nodes(host: Overlay) -> list[dict]:
    """The MIG config and monitor capabilities: what a container managing the whole node's
    partitions gets (NVIDIA_MIG_CONFIG_DEVICES / _MONITOR_DEVICES=all)."""
    return [_cap_node(host, names.MIG_CAP_CONFIG_MINOR), _cap_node(host, names.MIG_CAP_MONITOR_MINOR)]


def _bind(host_path: str, container_path: str, writable: bool = False) -> dict:
    return {"hostPath": host_path, "containerPath": container_path,
            "options": ["rw" if writable else "ro", "nosuid", "nodev", "bind"]}


def _per_gpu_devices(state: dict, host: Overlay, by_uuid: bool) -> list[dict]:
    devices = []
    nodes = gpu_nodes(state, host)
    for gpu, node in zip(state["gpus"], nodes):
        devices.append({"name": str(gpu["index"]), "containerEdits": {"deviceNodes": [node]}})
        if by_uuid:
            devices.append({"name": gpu["uuid"], "containerEdits": {"deviceNodes": [node]}})
    return devices


def toolkit_spec(state: dict, host: Overlay, **options) -> dict:
    """The ``nvidia.com/gpu`` spec the NVIDIA toolkit would write on a real node
    (``options``: those of ``toolkit_edits``)."""
    devices = _per_gpu_devices(state, host, by_uuid=True)
    devices.append({"name": names.CDI_DEVICE_ALL,
                    "containerEdits": {"deviceNodes": gpu_nodes(state, host)}})
    return {"cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_GPU,
            "devices": devices, "containerEdits": toolkit_edits(host, **options)}


def mig_spec(devices: list[MigDevice], host: Overlay, **options) -> dict:
    """The MIG devices of the ``nvidia.com/gpu`` kind, as the toolkit names them: by
    ``<gpu index>:<MIG index>`` and by UUID (``MIG-…``), each with its parent's node
    and its GPU and compute instance's capability nodes; the toolkit's common edits."""
    entries = []
    for device in devices:
        gpu = _node(host, names.gpu_node_name(device.parent_minor), names.NVIDIA_MAJOR,
                    device.parent_minor)
        caps = [_cap_node(host, minor) for minor in mig.device_minors(device)]
        edits = {"deviceNodes": [gpu, *caps]}
        entries.append({"name": f"{device.parent_index}:{device.index}", "containerEdits": edits})
        entries.append({"name": device.uuid, "containerEdits": edits})
    return {"cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_GPU,
            "devices": entries, "containerEdits": toolkit_edits(host, **options)}


def _cap_node(host: Overlay, minor: int) -> dict:
    name = mig.cap_node_name(minor)
    return {"path": f"{names.CONTAINER_DEV_DIR}/{names.NVIDIA_CAPS_DEV_NAME}/{name}",
            "hostPath": host.cap_node(minor), "type": "c", "major": names.NVIDIA_CAPS_MAJOR,
            "minor": minor, "permissions": "rw"}


def toolkit_edits(host: Overlay, *, nvml_library_staged: bool = False,
                  cuda_library_staged: bool = False, proc_hook_staged: bool = False,
                  fabricmanager_state_dir: str | None = None,
                  imex_nodes: list[dict] | None = None) -> dict:
    """The toolkit spec's common edits: control nodes, the libraries where its hooks would
    link them (beside each other, so the CUDA driver finds the NVML library it reads),
    nvidia-smi, the config directory read-only and the CUDA process records writable on
    top of it; the proc hook where it is staged."""
    mounts = []
    if nvml_library_staged:
        mounts.append(_bind(f"{host.lib}/{names.NVML_LIB_FILE}", names.CDI_NVML_LIB_MOUNT))
    if nvml_library_staged and cuda_library_staged:
        mounts.append(_bind(f"{host.lib}/{names.CUDA_LIB_FILE}", names.CDI_CUDA_LIB_MOUNT))
    mounts += [
        _bind(f"{host.bin}/{names.NVIDIA_SMI}", names.CDI_NVIDIA_SMI_MOUNT),
        _bind(host.pylib, names.CDI_PYLIB_MOUNT),
        _bind(host.driver_config, names.CDI_CONFIG_MOUNT),
    ]
    if nvml_library_staged and cuda_library_staged:
        mounts.append(_bind(host.process_records, f"{names.CDI_CONFIG_MOUNT}/{names.PROCESS_RECORDS_DIR}",
                            writable=True))
    env = [f"{names.ENV_NVIDIA_VISIBLE_DEVICES}={names.VISIBLE_VOID}",
           f"{names.ENV_NVML_CONFIG}={names.CDI_CONFIG_MOUNT}/{names.PROFILE_FILE}",
           f"{names.ENV_NVML_OVERRIDES}={names.CDI_CONFIG_MOUNT}/{names.OVERRIDES_DIR}"]
    if fabricmanager_state_dir:
        mounts.append(_bind(fabricmanager_state_dir, fabricmanager_state_dir))
        env.append(f"{names.ENV_FABRICMANAGER_STATE_DIR}={fabricmanager_state_dir}")
    return {"env": env, "deviceNodes": control_nodes(host) + list(imex_nodes or []),
            "mounts": mounts, **_hooks(host, proc_hook_staged)}


def mock_spec(state: dict, host: Overlay, proc_hook_staged: bool = False) -> dict:
    """The ``nvml-mock.nvidia.com/gpu`` spec the NRI plugin references in cdi mode."""
    devices = _per_gpu_devices(state, host, by_uuid=False)
    devices.append({"name": names.CDI_DEVICE_ALL,
                    "containerEdits": {"deviceNodes": gpu_nodes(state, host) + control_nodes(host)
                                       + mig_management_nodes(host)}})
    return {"cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_MOCK, "devices": devices,
            "containerEdits": {"env": [f"{names.ENV_CDI_DEVICE_SOURCE}=cdi"],
                               **_hooks(host, proc_hook_staged)}}


def management_spec(state: dict, host: Overlay, proc_hook_staged: bool = False) -> dict:
    """``management.nvidia.com/gpu=all``: every GPU, the control nodes and the MIG config
    and monitor capabilities, for the container toolkit's management annotations (and the
    proc hook where it is staged: the management path sees the node's /proc and /sys
    files as a GPU container does)."""
    nodes = gpu_nodes(state, host) + control_nodes(host) + mig_management_nodes(host)
    return {"cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_MANAGEMENT,
            "devices": [{"name": names.CDI_DEVICE_ALL, "containerEdits": {"deviceNodes": nodes}}],
            **({"containerEdits": _hooks(host, True)} if proc_hook_staged else {})}


def specs(state: dict, host: Overlay, **kwargs) -> dict[str, dict]:
    """File name → spec, for the two specs ``render-cdi`` and the cri simulator write."""
    return {names.CDI_SPEC_GPU_FILE: toolkit_spec(state, host, **kwargs),
            names.CDI_SPEC_MOCK_FILE: mock_spec(state, host, kwargs.get("proc_hook_staged", False))}


def to_yaml(spec: dict) -> str:
    import yaml

    from mokka.core.yamlio import SafeDumper

    class _Plain(SafeDumper):
        def ignore_aliases(self, data):   # shared node dicts: no &anchors in a spec
            return True

    return yaml.dump(spec, Dumper=_Plain, sort_keys=False, default_flow_style=False)


# --- reading ------------------------------------------------------------------------

def read_spec(path: str) -> dict[str, tuple[CDIEdits, ...]]:
    """``device_edits`` of the spec file at ``path`` (YAML or JSON, bounded as
    every YAML file Mokka reads); UnreadableSpec if it cannot be had."""
    from mokka.core import yamlio  # lazily: only a node with CDI specs pays for it

    try:
        with open(path, "rb") as handle:
            doc = yamlio.safe_load(handle)
    except (OSError, ValueError, yamlio.YAMLError) as exc:
        raise UnreadableSpec(str(exc)) from None
    return device_edits(doc)


def device_edits(doc: object) -> dict[str, tuple[CDIEdits, ...]]:
    """Fully qualified device name -> (common edits, device edits) of one spec,
    each left out when empty.

    Device nodes without type/major/minor are completed from their host path,
    as the runtime would; one that is not a device node there is dropped.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        return {}
    common = _edits(doc.get("containerEdits"))
    result: dict[str, tuple[CDIEdits, ...]] = {}
    for device in _list(doc.get("devices")):
        if isinstance(device, dict) and isinstance(device.get("name"), str):
            own = _edits(device.get("containerEdits"))
            result[qualified_name(doc["kind"], device["name"])] = tuple(
                e for e in (common, own) if e != CDIEdits())
    return result


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _edits(raw: object) -> CDIEdits:
    if not isinstance(raw, dict):
        return CDIEdits()
    env = tuple(e for e in _list(raw.get("env")) if isinstance(e, str) and "=" in e)
    devices = tuple(d for d in map(_device_node, _list(raw.get("deviceNodes"))) if d is not None)
    mounts = tuple(m for m in map(_mount, _list(raw.get("mounts"))) if m is not None)
    hooks = tuple(h for h in map(_hook, _list(raw.get("hooks"))) if h is not None)
    return CDIEdits(env=env, devices=devices, mounts=mounts, hooks=hooks)


def _device_node(raw: object) -> Device | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        return None
    path = raw["path"]
    kind, major, minor = raw.get("type"), _int(raw.get("major")), _int(raw.get("minor"))
    mode, uid, gid = _int(raw.get("fileMode")), _int(raw.get("uid")), _int(raw.get("gid"))
    if not isinstance(kind, str) or major is None or minor is None:
        host_path = raw.get("hostPath") if isinstance(raw.get("hostPath"), str) else path
        try:
            st = os.lstat(host_path)
        except OSError:
            return None
        if not (stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)):
            return None
        kind = kind if isinstance(kind, str) else ("c" if stat.S_ISCHR(st.st_mode) else "b")
        major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
        mode = stat.S_IMODE(st.st_mode) if mode is None else mode
    return Device(path=path, type=kind, major=major, minor=minor, file_mode=mode, uid=uid, gid=gid)


def _mount(raw: object) -> Mount | None:
    if not isinstance(raw, dict):
        return None
    source, destination = raw.get("hostPath"), raw.get("containerPath")
    if not isinstance(source, str) or not isinstance(destination, str):
        return None
    options = tuple(o for o in _list(raw.get("options")) if isinstance(o, str))
    kind = raw.get("type") if isinstance(raw.get("type"), str) and raw.get("type") else "bind"
    return Mount(destination=destination, source=source, type=kind, options=options)


def _hook(raw: object) -> Hook | None:
    """A createContainer hook with an absolute path; any other hook, or a malformed one,
    is skipped (the runtime would refuse the malformed; the rest is not ours to run)."""
    if not isinstance(raw, dict) or raw.get("hookName") != CREATE_CONTAINER:
        return None
    path = raw.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    args = _list(raw.get("args"))
    env = _list(raw.get("env"))
    if not all(isinstance(a, str) for a in args) or not all(isinstance(e, str) for e in env):
        return None
    timeout = _int(raw.get("timeout"))
    return Hook(path=path, args=tuple(args), env=tuple(env),
                timeout=timeout if timeout is not None and timeout > 0 else None)
