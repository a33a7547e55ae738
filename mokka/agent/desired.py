"""Raw documents -> the desired node state every simulator stages from (pure).

The staged ``config.yaml`` is the parsed profile with ``system.num_devices``
set to the GPU count (the profile's, or ``--gpu-count``), written out again as
plain block YAML (never an edit of the user's text, so flow style, JSON, anchors
and merge keys stage as they compile). We compile THAT text, so config.nvml's profile digest is the digest
of the staged file, which the mock NVML library checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mokka.core import compile as comp
from mokka.core import mig
from mokka.engine import flatstate
from mokka.core import profile as prof
from mokka.core import topology as topo


class DesiredError(ValueError):
    """A document was rejected: ``file`` names it, ``reason`` says why."""

    def __init__(self, file: str, reason: str):
        self.file, self.reason = file, reason
        super().__init__(f"{file}: {reason}")


@dataclass(frozen=True)
class Desired:
    generation: int
    profile_source: str
    config_text: bytes            # the staged config.yaml
    state: dict = field(compare=False, repr=False)
    state_nvml: bytes = field(default=b"", compare=False, repr=False)  # for the C library
    topology_text: bytes | None = None
    imex_channels: int = 0        # 0: only on fabric profiles, with the default count
    unknown_keys: tuple = ()      # profile keys the format does not know (accepted)

    @property
    def digest(self) -> str:
        """Digest of the staged state (profile, topology and node name included)."""
        return prof.digest(self.state_nvml)

    @property
    def gpu_count(self) -> int:
        return int(self.state["gpu_count"])


def staged_text(doc: dict, count: int, mig_layout: str = "") -> bytes:
    """The staged config.yaml: ``doc`` with ``system.num_devices: count`` (and, with a
    ``mig_layout``, MIG on with that layout on every GPU), re-dumped."""
    from mokka.core import yamlio

    system = dict(doc.get("system") or {})
    system["num_devices"] = count
    staged = {**doc, "system": system}
    if mig_layout:
        defaults = dict(doc.get("device_defaults") or {})
        defaults["mig"] = {**(defaults.get("mig") or {}), "mode_current": mig.ENABLED,
                           "mode_pending": mig.ENABLED, "layout": mig_layout}
        staged["device_defaults"] = defaults
    return yamlio.dump(staged)


def mig_layout_problem(doc: dict, name: str) -> str | None:
    """Why ``--mig-layout name`` cannot boot this profile's GPUs, or None."""
    block = (doc.get("device_defaults") or {}).get("mig") or {}
    known = [layout.get("name") for layout in block.get("layouts") or []]
    if not block.get("max_gpu_instances") or not block.get("gpu_instance_profiles"):
        return f"--mig-layout {name}: this profile's GPUs have no MIG partition table"
    if name not in known:
        return f"--mig-layout {name}: not one of the profile's mig.layouts ({', '.join(known)})"
    return None


def with_num_devices(text: bytes, count: int) -> bytes:
    """A profile's bytes with ``num_devices: count`` set (tests and benchmarks shape nodes so)."""
    return staged_text(prof.parse(text).doc, count)


def parse_topology(text: bytes | None, where: str) -> dict | None:
    if text is None:
        return None
    from mokka.core import yamlio
    try:
        return topo.validate(yamlio.safe_load(text), where)
    except yamlio.YAMLError as exc:
        raise DesiredError(where, prof.yaml_problem(exc)) from None
    except topo.TopologyError as exc:
        raise DesiredError(where, str(exc)) from None


def build(generation: int, profile_source: str, profile_path: str, profile_text: bytes,
          topology_text: bytes | None = None, topology_path: str = "",
          node_name: str = "", imex_channels: int = 0, mig_layout: str = "",
          identity_node: str = "", gpu_count: int = 0) -> Desired:
    """Compile one desired state; every rejection is a DesiredError naming the file.
    ``gpu_count`` (0: the profile's) stages that many GPUs; ``identity_node`` gives them
    that node's identities (mokka.core.identity)."""
    try:
        first = prof.parse(profile_text, source=profile_source, path=profile_path)
        problem = mig_layout_problem(first.doc, mig_layout) if mig_layout else None
        if problem:
            raise DesiredError(profile_path, problem)
        staged = staged_text(first.doc, gpu_count or first.count, mig_layout)
        profile = prof.parse(staged, source=profile_source, path=profile_path)
    except prof.ProfileError as exc:
        reason = f"{exc.field}: {exc.message}" if exc.field else exc.message
        raise DesiredError(profile_path, reason) from None
    doc = parse_topology(topology_text, topology_path)
    try:
        state = comp.compile_profile(profile, doc, node_name, identity_node)
        state_nvml = flatstate.state_companion(state)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        # A profile the schema let through that compile cannot take is our bug, but the
        # agent still names the file and keeps the last good state rather than crash a pass.
        raise DesiredError(profile_path, f"cannot compile: {type(exc).__name__}: {exc}") from None
    return Desired(generation=generation, profile_source=profile_source, config_text=staged,
                   state=state, state_nvml=state_nvml,
                   topology_text=topology_text,
                   imex_channels=imex_channels, unknown_keys=first.unknown)
