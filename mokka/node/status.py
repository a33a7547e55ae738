"""``mokka status``: a staged node at a glance.

GPU facts come from the engine, the mock NVML library the node's own tools load
(``mokka.engine.nvml``, asked as our nvidia-smi asks it), in a process aimed at
the node by ``mokka env``'s rule, so the UUIDs and MIG devices shown are the ones
NVIDIA's nvidia-smi prints on that node. The rest is what the agent leaves on
disk, read and never changed:

* the profile's source and the staged state's digest: the compiled companion
  beside the profile copy (the digest is the one the agent logs as converged and
  its /stagedz reports; the generation counter lives only in the agent's memory);
* the runtime overrides: ``mokka ctl``'s documents, read as ``ctl status`` reads them;
* the node agent: the pid holding its root lock (/proc/locks);
* fabricmanager: its ready marker, which names its pid and goes when it stops;
* kernellog: a thread of the agent, so it runs exactly while the agent does;
* mock-ib: its socket, running when something accepts a connection on it.

``gather`` does the reading; ``render`` and ``as_json`` are pure.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field

from mokka.core import names
from mokka.core.overlay import Overlay, under

#: How long mock-ib's socket may take to accept before it counts as not running.
CONNECT_TIMEOUT_S = 0.5
MIG_MODES = {0: "disabled", 1: "enabled"}
DAEMONS = ("fabricmanager", "kernellog", "mock-ib")


@dataclass(frozen=True)
class MigDevice:
    index: int
    name: str | None
    uuid: str | None
    gpu_instance: int | None
    compute_instance: int | None


@dataclass(frozen=True)
class Gpu:
    index: int
    physical_index: int
    uuid: str
    name: str | None = None
    #: NVML's words for the GPU when it answers no handle (a GPU fallen off the bus).
    error: str | None = None
    mig_current: str | None = None        # "enabled", "disabled", None: no MIG on this board
    mig_pending: str | None = None
    mig_devices: tuple[MigDevice, ...] = ()
    overrides: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Daemon:
    name: str
    running: bool
    detail: str


@dataclass(frozen=True)
class Status:
    host_root: str
    overlay: str
    profile_source: str
    digest: str
    gpus: tuple[Gpu, ...]
    all_overrides: dict
    agent_pid: str                          # "" when no agent holds the root lock
    daemons: tuple[Daemon, ...]

    @property
    def builtin(self) -> bool:
        from mokka.core import profile as prof
        return self.profile_source in names.BUILTIN_PROFILES and not prof.is_path(self.profile_source)


class StatusError(Exception):
    """The node cannot be read (its library refuses, its companion is unreadable): one line."""


# --- reading -------------------------------------------------------------------------

def companion_facts(text: bytes) -> tuple[str, str]:
    """(profile source, digest) of the staged state's companion bytes."""
    from mokka.core import profile as prof
    from mokka.engine import flatstate
    return flatstate.value_of(text, "profile_source") or "", prof.digest(text)


def _overrides(path: str) -> dict:
    from mokka.engine import overrides as ovr
    try:
        return ovr.read(path) or {}
    except ovr.OverridesError as exc:
        return {"error": str(exc)}


def _library_path(overlay: Overlay) -> str:
    """The node's own library (staged beside its nvidia-smi), else the one Mokka carries."""
    staged = os.path.join(overlay.lib, names.NVML_LIB_FILE)
    if os.path.isfile(staged):
        return staged
    from mokka.engine import nvml
    return nvml.library_path(None)


def _gpu(lib, index: int, directory: str) -> Gpu:
    from mokka.engine import nvml, overrides as ovr
    from mokka.smi import gpu as smi_gpu

    physical, uuid = lib.identity(index)
    overrides = _overrides(ovr.scope_path(directory, physical))
    try:
        handle = lib.handle(index)
    except nvml.NvmlError as exc:
        return Gpu(index, physical, uuid, error=str(exc), overrides=overrides)
    device = smi_gpu.Gpu(lib, index, handle)
    current, pending = device.mig_mode()
    migs = tuple(MigDevice(m.index, m.name(), m.uuid(), *m.instance_ids())
                 for m in device.mig_devices()) if current == 1 else ()
    return Gpu(index, physical, uuid, name=device.name(), mig_current=MIG_MODES.get(current),
               mig_pending=MIG_MODES.get(pending), mig_devices=migs, overrides=overrides)


def read_gpus(overlay: Overlay, node_env: dict[str, str]) -> tuple[tuple[Gpu, ...], dict]:
    """(every GPU of the node, the ``all`` overrides), asked of the engine in this process
    once ``node_env`` (``mokka.node.env.node_env``) is its environment."""
    from mokka.engine import nvml
    from mokka.engine import overrides as ovr
    from mokka.node.env import SEARCH_LISTS

    for key, value in node_env.items():
        if key not in SEARCH_LISTS:            # this process has loaded what it loads
            os.environ[key] = value
    # Every GPU of the node, with the node's own overrides: not a subset a caller's shell names.
    for key in (names.ENV_NVML_VISIBLE_DEVICES, names.ENV_NVML_OVERRIDES):
        os.environ.pop(key, None)
    try:
        lib = nvml.Library(_library_path(overlay))
        lib.init()
    except (nvml.LibraryError, nvml.NvmlError) as exc:
        raise StatusError(f"cannot read the node's GPUs: {exc}") from None
    try:
        directory = lib.node_path(names.NODE_PATH_OVERRIDES)
        gpus = tuple(_gpu(lib, i, directory) for i in range(lib.count()))
        return gpus, _overrides(ovr.scope_path(directory, None))
    except nvml.NvmlError as exc:
        raise StatusError(f"cannot read the node's GPUs: {exc}") from None
    finally:
        lib.shutdown()


def agent_pid(host_root: str) -> str:
    """The pid of the node agent holding the root lock, or ""."""
    from mokka.core.fsutil import holder_pid
    try:
        fd = os.open(under(host_root, names.AGENT_LOCK_PATH), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        return holder_pid(fd)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fabricmanager(overlay: Overlay) -> Daemon:
    from mokka.core.fsutil import ReadRefused, read_bounded
    try:
        text = read_bounded(overlay.fabric_ready, 4096, follow=False).decode(errors="replace")
    except FileNotFoundError:
        return Daemon("fabricmanager", False, "no ready marker")
    except (OSError, ReadRefused) as exc:
        return Daemon("fabricmanager", False, f"ready marker unreadable: {exc}")
    word, _, number = text.strip().partition(" ")
    if word != "pid" or not number.isdigit():
        return Daemon("fabricmanager", False, "ready marker names no pid")
    if not _alive(int(number)):
        return Daemon("fabricmanager", False, f"ready marker left by pid {number}, which is gone")
    return Daemon("fabricmanager", True, f"pid {number}")


def kernellog(agent: str) -> Daemon:
    if agent:
        return Daemon("kernellog", True, f"in node-agent pid {agent}")
    return Daemon("kernellog", False, "runs in the node agent, which is not running")


def mock_ib(overlay: Overlay) -> Daemon:
    path = overlay.ib_ping_socket
    if not os.path.exists(path):
        return Daemon("mock-ib", False, "no socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(path)
        except OSError:
            return Daemon("mock-ib", False, f"nothing accepts on {path}")
    return Daemon("mock-ib", True, path)


def gather(host_root: str, overlay: Overlay, node_env: dict[str, str]) -> Status:
    from mokka.core.fsutil import ReadRefused, read_bounded
    from mokka.engine import flatstate

    companion = flatstate.companion_path(overlay.profile)
    try:
        text = read_bounded(companion, names.MAX_STATE_COMPANION_BYTES, follow=False)
    except (OSError, ReadRefused) as exc:
        raise StatusError(f"cannot read {companion}: {getattr(exc, 'strerror', None) or exc}") from None
    source, digest = companion_facts(text)
    gpus, all_overrides = read_gpus(overlay, node_env)
    agent = agent_pid(host_root)
    return Status(host_root=host_root, overlay=overlay.root, profile_source=source, digest=digest,
                  gpus=gpus, all_overrides=all_overrides, agent_pid=agent,
                  daemons=(fabricmanager(overlay), kernellog(agent), mock_ib(overlay)))


# --- showing ---------------------------------------------------------------------------

def overrides_text(doc: dict) -> str:
    """An overrides document as ``key=value`` pairs, dotted as the companion spells keys."""
    from mokka.engine import flatstate
    if not doc:
        return "none"
    if set(doc) == {"error"}:
        return str(doc["error"])
    return ", ".join(f"{k}={v}" for k, v in flatstate.flatten(doc) if not k.endswith(".len"))


def render(status: Status) -> str:
    kind = "built-in" if status.builtin else "file"
    agent = f"running (pid {status.agent_pid})" if status.agent_pid else "not running"
    lines = [f"host root:     {status.host_root}",
             f"overlay:       {status.overlay}",
             f"profile:       {status.profile_source} ({kind})",
             f"staged:        {status.digest}",
             f"node-agent:    {agent}"]
    for d in status.daemons:
        lines.append(f"{d.name + ':':<15}{'running' if d.running else 'not running'} ({d.detail})")
    lines.append(f"overrides:     all GPUs: {overrides_text(status.all_overrides)}")
    lines.append(f"GPUs:          {len(status.gpus)}")
    for g in status.gpus:
        if g.error:
            lines.append(f"  GPU {g.index}: {g.uuid}: {g.error}")
        else:
            mig = f"MIG {g.mig_current}" if g.mig_current else "no MIG"
            if g.mig_pending and g.mig_pending != g.mig_current:
                mig += f" ({g.mig_pending} after reset)"
            lines.append(f"  GPU {g.index}: {g.name} (UUID: {g.uuid}) {mig}")
        for m in g.mig_devices:
            lines.append(f"    MIG {m.index}: {m.name} (GI {m.gpu_instance}, CI {m.compute_instance}) "
                         f"(UUID: {m.uuid})")
        if g.overrides:
            lines.append(f"    overrides: {overrides_text(g.overrides)}")
    return "\n".join(lines) + "\n"


def as_json(status: Status) -> str:
    doc = {
        "host_root": status.host_root,
        "overlay": status.overlay,
        "profile": {"name": status.profile_source if status.builtin else None,
                    "source": status.profile_source, "builtin": status.builtin},
        "staged": {"digest": status.digest},
        "gpu_count": len(status.gpus),
        "gpus": [{"index": g.index, "physical_index": g.physical_index, "name": g.name,
                  "uuid": g.uuid, "error": g.error,
                  "mig": {"current": g.mig_current, "pending": g.mig_pending,
                          "devices": [asdict(m) for m in g.mig_devices]},
                  "overrides": g.overrides} for g in status.gpus],
        "overrides": {"all": status.all_overrides},
        "node_agent": {"running": bool(status.agent_pid), "pid": int(status.agent_pid)
                       if status.agent_pid.isdigit() else None},
        "daemons": {d.name: {"running": d.running, "detail": d.detail} for d in status.daemons},
    }
    return json.dumps(doc, indent=2) + "\n"
