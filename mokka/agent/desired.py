"""Raw documents -> the desired node state every simulator stages from (pure).

The staged ``config.yaml`` is the profile with ``num_devices: N`` inserted under
``system:``; we compile THAT text so state.json's profile digest is the digest
of the staged file, which ``mokka.core.state.load_for_config`` relies on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mokka.core import compile as comp
from mokka.core import flatstate
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
    state_json: str = field(compare=False, repr=False)
    state_nvml: bytes = field(default=b"", compare=False, repr=False)  # for the C library
    topology_text: bytes | None = None
    topology_nvml: bytes | None = field(default=None, compare=False, repr=False)
    imex_channels: int = 0        # 0: only on fabric profiles, with the default count

    @property
    def digest(self) -> str:
        """Digest of the staged state (profile, topology and node name included)."""
        return prof.digest(self.state_json.encode())

    @property
    def gpu_count(self) -> int:
        return int(self.state["gpu_count"])


_SYSTEM = re.compile(rb"^system:[ \t]*(#.*)?$", re.M)
_NUM = re.compile(rb"^[ \t]+num_devices:.*$", re.M)


def with_num_devices(text: bytes, count: int) -> bytes:
    """The profile bytes with ``num_devices: count`` set under ``system:`` (block style)."""
    match = _SYSTEM.search(text)
    if match is None:
        sep = b"" if text.endswith(b"\n") or not text else b"\n"
        return text + sep + b"system:\n  num_devices: %d\n" % count
    start = match.end() + 1
    block_end = re.compile(rb"^\S", re.M).search(text, start)
    end = block_end.start() if block_end else len(text)
    block = text[start:end]
    if _NUM.search(block):      # replace rather than duplicate a key YAML would merge silently
        block = _NUM.sub(lambda m: m.group(0).split(b"num_devices:")[0] + b"num_devices: %d" % count,
                         block, count=1)
        return text[:start] + block + text[end:]
    indent = re.search(rb"^([ \t]+)\S", block, re.M)
    pad = indent.group(1) if indent else b"  "
    return text[:start] + pad + b"num_devices: %d\n" % count + text[start:]


def parse_topology(text: bytes | None, where: str) -> dict | None:
    if text is None:
        return None
    from mokka.core import yamlio
    try:
        return topo.validate(yamlio.safe_load(text), where)
    except yamlio.YAMLError as exc:
        raise DesiredError(where, f"invalid YAML: {str(exc).splitlines()[0]}") from None
    except topo.TopologyError as exc:
        raise DesiredError(where, str(exc)) from None


def build(generation: int, profile_source: str, profile_path: str, profile_text: bytes,
          topology_text: bytes | None = None, topology_path: str = "",
          node_name: str = "", imex_channels: int = 0) -> Desired:
    """Compile one desired state; every rejection is a DesiredError naming the file."""
    try:
        first = prof.parse(profile_text, source=profile_source, path=profile_path)
        staged = with_num_devices(profile_text, first.count)
        profile = prof.parse(staged, source=profile_source, path=profile_path)
    except prof.ProfileError as exc:
        reason = f"{exc.field}: {exc.message}" if exc.field else exc.message
        raise DesiredError(profile_path, reason) from None
    doc = parse_topology(topology_text, topology_path)
    state = comp.compile_profile(profile, doc, node_name)
    return Desired(generation=generation, profile_source=profile_source, config_text=staged,
                   state=state, state_json=comp.dumps(state),
                   state_nvml=flatstate.state_companion(state), topology_text=topology_text,
                   topology_nvml=(flatstate.topology_companion(doc, topology_text)
                                  if doc is not None else None),
                   imex_channels=imex_channels)
