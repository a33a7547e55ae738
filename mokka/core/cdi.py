"""CDI specs for a compiled state (facts §4), as plain dicts.

Pure: the node agent's cri simulator and ``mokka render-cdi`` do the writing.
A spec names only host paths Mokka stages — a missing host path fails every
container that uses the spec — so there is no ``nvidia-cdi-hook`` hook (we ship
none) and no NVML library mount unless the caller says a library is staged.
"""

from __future__ import annotations

from mokka.core import names
from mokka.core.overlay import Overlay


def _node(host: Overlay, name: str, major: int, minor: int) -> dict:
    return {"path": f"{names.CONTAINER_DEV_DIR}/{name}", "hostPath": host.control_node(name),
            "type": "c", "major": major, "minor": minor, "permissions": "rw"}


def gpu_nodes(state: dict, host: Overlay) -> list[dict]:
    return [_node(host, names.gpu_node_name(g["minor_number"]), names.NVIDIA_MAJOR, g["minor_number"])
            for g in state["gpus"]]


def control_nodes(host: Overlay) -> list[dict]:
    return [_node(host, name, major, minor) for name, major, minor in names.CONTROL_DEVICES]


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


def toolkit_spec(state: dict, host: Overlay, *, nvml_library_staged: bool = False,
                 cuda_library_staged: bool = False,
                 fabricmanager_state_dir: str | None = None,
                 imex_nodes: list[dict] | None = None) -> dict:
    """The ``nvidia.com/gpu`` spec the NVIDIA toolkit would write on a real node: the
    libraries where its hooks would link them (beside each other, so the CUDA driver finds
    the NVML library it reads), the config directory read-only and the CUDA process
    records writable on top of it."""
    devices = _per_gpu_devices(state, host, by_uuid=True)
    devices.append({"name": names.CDI_DEVICE_ALL,
                    "containerEdits": {"deviceNodes": gpu_nodes(state, host)}})
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
    edits = {"env": env, "deviceNodes": control_nodes(host) + list(imex_nodes or []),
             "mounts": mounts}
    return {"cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_GPU,
            "devices": devices, "containerEdits": edits}


def mock_spec(state: dict, host: Overlay) -> dict:
    """The ``nvml-mock.nvidia.com/gpu`` spec the NRI plugin references in cdi mode."""
    devices = _per_gpu_devices(state, host, by_uuid=False)
    devices.append({"name": names.CDI_DEVICE_ALL,
                    "containerEdits": {"deviceNodes": gpu_nodes(state, host) + control_nodes(host)}})
    return {"cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_MOCK, "devices": devices,
            "containerEdits": {"env": [f"{names.ENV_CDI_DEVICE_SOURCE}=cdi"]}}


def management_spec(state: dict, host: Overlay) -> dict:
    """``management.nvidia.com/gpu=all``: every GPU and the control nodes (seed 003)."""
    return {"cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_MANAGEMENT,
            "devices": [{"name": names.CDI_DEVICE_ALL,
                         "containerEdits": {"deviceNodes": gpu_nodes(state, host) + control_nodes(host)}}]}


def specs(state: dict, host: Overlay, **kwargs) -> dict[str, dict]:
    """File name → spec, for the two specs ``render-cdi`` and the cri simulator write."""
    return {names.CDI_SPEC_GPU_FILE: toolkit_spec(state, host, **kwargs),
            names.CDI_SPEC_MOCK_FILE: mock_spec(state, host)}


def device_names(spec: dict) -> list[str]:
    """Fully qualified names a spec defines (``kind=name``)."""
    return [f"{spec['kind']}={d['name']}" for d in spec["devices"]]


def to_yaml(spec: dict) -> str:
    import yaml

    class _Plain(yaml.SafeDumper):
        def ignore_aliases(self, data):   # shared node dicts: no &anchors in a spec
            return True

    return yaml.dump(spec, Dumper=_Plain, sort_keys=False, default_flow_style=False)
