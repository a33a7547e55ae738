"""What a process sees: the compiled state, adjusted for its environment.

``load`` finds the state (``MOCK_NVML_CONFIG`` or the overlay the entry point
lives in), applies the topology document, resolves ``state: auto`` fabric,
writes the moving readings of this second (mokka.smi.dynamic), deep-merges the
overrides file and keeps the visible GPUs, renumbered from 0.
Not even json or hashlib load on the way (see mokka.core.state); yaml is imported only
when a topology document or an overrides file actually exists.
"""

from __future__ import annotations

import os
import sys
from mokka.core import names
from mokka.core import state as core_state
from mokka.smi import dynamic
from mokka.smi import overrides as ovr


class EngineError(Exception):
    """No usable state: printed as one line by the shims."""


class Node:
    """The state plus the GPUs this process sees (``gpus[i]["index"] == i``).

    A plain class, not a dataclass: importing dataclasses costs more than the
    whole of ``nvidia-smi -L`` otherwise does.
    """

    def __init__(self, state: dict, config_path: str, overrides_path: str):
        self.state = state
        self.config_path = config_path
        self.overrides_path = overrides_path
        self.gpus: list = []
        self.warnings: list = []

    @property
    def system(self) -> dict:
        return self.state.get("system") or {}


def load(environ=None, argv0: str | None = None) -> Node:
    environ = os.environ if environ is None else environ
    try:
        config = core_state.locate(environ, argv0)
        st = core_state.load_for_config(config)
    except Exception as exc:              # StateError, OSError, a broken profile: one line
        raise EngineError(str(exc)) from None
    node = Node(state=st, config_path=config, overrides_path=overrides_path(environ, config))
    _apply_topology(node, environ)
    _resolve_fabric(st.get("gpus") or [], environ, config)
    try:
        ov = ovr.read(node.overrides_path)
    except ovr.OverridesError as exc:
        node.warnings.append(str(exc))
        ov = None
    gpus = st.get("gpus") or []
    now = dynamic.clock(environ)
    for gpu in gpus:
        gpu["physical_index"] = gpu["index"]
        dynamic.apply(gpu, now)               # moving readings: over the state, under the overrides
        if ov:
            ovr.apply(gpu, ov)
    node.gpus = renumber(select_visible(gpus, environ))
    for message in node.warnings:
        print(f"WARNING: {message}", file=sys.stderr)
    return node


def overrides_path(environ, config_path: str) -> str:
    return environ.get(names.ENV_NVML_OVERRIDES) or os.path.join(
        os.path.dirname(os.path.abspath(config_path)), names.OVERRIDES_FILE)


# --- topology ---------------------------------------------------------------------

def _apply_topology(node: Node, environ) -> None:
    node_name = environ.get(names.ENV_NODE_NAME)
    path = environ.get(names.ENV_TOPOLOGY_CONFIG)
    if not node_name or not path or not os.path.isfile(path):
        return                                    # a missing document is a silent no-op
    from mokka.core import topology

    try:
        from mokka.core import yamlio
        with open(path, "rb") as f:
            doc = yamlio.safe_load(f.read())
        topology.validate(doc, path)
    except Exception as exc:                      # unreadable or invalid: warn, keep the profile
        node.warnings.append(f"ignoring topology document {path}: {exc}".replace("\n", " "))
        return
    topology.apply(node.state, doc, node_name)


# --- fabric -------------------------------------------------------------------------

def fabric_state_dir(environ, config_path: str = "") -> str | None:
    """The fabricmanager state dir: MOCK_FABRICMANAGER_STATE_DIR, else the driver
    root's own (``<root>/config/config.yaml`` -> ``<root>/fabric-state``) when it
    exists; None when there is no fabricmanager (native/nvml/node.c does the same)."""
    configured = environ.get(names.ENV_FABRICMANAGER_STATE_DIR)
    if configured:
        return configured
    if not config_path:
        return None
    config_dir = os.path.dirname(os.path.abspath(config_path))
    if os.path.basename(config_dir) != names.DRIVER_CONFIG_NAME:
        return None
    candidate = os.path.join(os.path.dirname(config_dir), names.DRIVER_FABRIC_STATE_NAME)
    return candidate if os.path.isdir(candidate) else None


def fabric_ready(environ, config_path: str = "") -> bool:
    """``state: auto`` is COMPLETED unless a fabricmanager state dir lacks the marker."""
    state_dir = fabric_state_dir(environ, config_path)
    if state_dir is None:
        return True
    return os.path.exists(os.path.join(state_dir, names.FABRICMANAGER_READY))


def _resolve_fabric(gpus: list, environ, config_path: str = "") -> None:
    ready = None
    for gpu in gpus:
        fabric = gpu.get("fabric")
        if not fabric:
            continue
        state = str(fabric.get("state") or names.FABRIC_STATE_DEFAULT).lower()
        if state == names.FABRIC_STATE_AUTO:
            if ready is None:
                ready = fabric_ready(environ, config_path)
            state = "completed" if ready else "in_progress"
        fabric["state"] = state


# --- visibility ---------------------------------------------------------------------

def select_visible(gpus: list, environ) -> list:
    """``MOCK_NVML_VISIBLE_DEVICES`` wins; else the /dev/nvidiaN nodes that exist."""
    wanted = environ.get(names.ENV_NVML_VISIBLE_DEVICES)
    if wanted is not None and wanted.strip() != "":
        return _by_list(gpus, wanted.strip())
    root = environ.get(names.ENV_DEV_ROOT, "/")
    present = [g for g in gpus if os.path.exists(
        os.path.join(root, "dev", names.gpu_node_name(int(g.get("minor_number", g["index"])))))]
    if 0 < len(present) < len(gpus):
        return present
    return list(gpus)                              # all or none present: every GPU


def _by_list(gpus: list, wanted: str) -> list:
    low = wanted.lower()
    if low == names.VISIBLE_NONE or low == "void":
        return []
    if low == names.VISIBLE_ALL:
        return list(gpus)
    keep = set()
    for item in (p.strip() for p in wanted.split(",")):
        for g in gpus:
            if item.isdigit() and int(item) == g["index"]:
                keep.add(g["index"])
            elif item.lower().startswith("gpu-") and str(g.get("uuid", "")).lower().startswith(item.lower()):
                keep.add(g["index"])
    return [g for g in gpus if g["index"] in keep]


def renumber(gpus: list) -> list:
    for i, gpu in enumerate(gpus):
        gpu["index"] = i
    return gpus


# --- device selection (-i) ----------------------------------------------------------

def pick(gpus: list, ids: str | None) -> list:
    """GPUs named by a -i value (indices, UUIDs or bus ids); EngineError if one is unknown."""
    if ids is None:
        return list(gpus)
    chosen = []
    for item in (p.strip() for p in ids.split(",") if p.strip()):
        match = None
        for g in gpus:
            bus = g.get("pci", {}).get("bus_id", "")
            if (item.isdigit() and int(item) == g["index"]) or item.lower() == str(g.get("uuid", "")).lower() \
                    or (":" in item and bus.lower().endswith(item.lower().lstrip("0") or "-")):
                match = g
                break
        if match is None:
            raise EngineError("No devices were found")
        if match not in chosen:
            chosen.append(match)
    return chosen
