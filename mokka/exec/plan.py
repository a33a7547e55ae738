"""What ``mokka exec`` sets up, decided without touching the disk.

The environment, the overlay's binds and the proc hook come from the NRI
decision itself (``mokka.nri.inject.adjust``) for a container on the management
path (the devices annotation: every GPU of the node), with the overlay's host
path as its mount path: a program started this way sees the variables and
paths a GPU-selected container sees, by the same rule, not a copy of it. So,
where the proc hook is staged, neither libmockfs nor MOCK_PCI_ROOT: every
program, dynamically linked or not, reads the PCI tree the hook gives /sys.

InfiniBand is the caller's ``MOCK_IB``, as the plugin's tiers name it: ``full``
or ``sysfs`` decides as for a pod that also has the InfiniBand annotation with
the plugin at that tier (the IB variables, and the proc hook merges the HCAs'
PCI functions into /sys); unset or ``off``, a GPU-only container's ``MOCK_IB=off``.
The hook reads ``MOCK_IB`` from its own environment in this form, so it is given
the command's.

GPUs are the caller's ``NVIDIA_VISIBLE_DEVICES``, as NVIDIA's container toolkit
reads a container's: unset or ``all``, every GPU of the node; a comma list of
GPU indices or UUIDs, only those GPUs' ``/dev/nvidiaN`` (the others are whited
out of /dev), so the hook's /sys view, the mock library and every reader see
those alone, as a container allocated them; ``none``, ``void`` or empty, no GPU
(the driver's files and control nodes stay, as in a container given none). MIG
devices are not selected one by one: naming one says to select its GPU.

The rest is read from the text the kernel gives (/proc/self/mountinfo,
/proc/self/status) and the staged state's companion by the I/O side and passed
in here.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Mapping, NamedTuple, Sequence

from mokka.core import names
from mokka.core.overlay import Overlay
from mokka.nri import inject
from mokka.nri.inject.model import Hook, Mount

#: CAP_SYS_ADMIN's bit in the capability sets: unshare(CLONE_NEWNS) and every mount need it.
CAP_SYS_ADMIN = 21
#: The proc hook's calling form outside runc: ``HOOK OVERLAY ROOTFS``, the root being
#: this process's own "/" inside its private mount namespace.
HOOK_ROOTFS = "/"

NEEDS_ROOT = ("needs root (CAP_SYS_ADMIN) to mount the node's /dev, /sys and /proc/driver "
              "in a private mount namespace; run it as root (sudo mokka exec ...)")
NOT_STAGED = ("no staged node at {path}; stage one first: mokka node-agent --host-root {root} "
              "(or pass the --host-root / --overlay-host-path it staged under)")
NO_COMMAND = "no COMMAND given; usage: mokka exec --host-root ROOT -- COMMAND [ARGS]..."
BAD_IB = "MOCK_IB={value} is no InfiniBand tier: give full, sysfs or off (unset: off)"
BAD_VISIBLE = ("NVIDIA_VISIBLE_DEVICES={value}: {entry!r} is no GPU of this node (indices {known}); "
               "give all, none, or a comma list of its GPU indices or UUIDs")
MIG_VISIBLE = ("NVIDIA_VISIBLE_DEVICES={value}: {entry!r} names a MIG device, which mokka exec does not "
               "select alone; give its GPU's index or UUID (the command sees that GPU's MIG devices)")
#: The toolkit's words for no GPU: none, and void or empty (no GPU given by the variable).
NO_GPU_VALUES = (names.VISIBLE_NONE, names.VISIBLE_VOID, "")
NO_HOOK = ("the proc hook is not staged at {path} (a node staged without the native build): "
           "/sys, /proc/driver and /proc/modules stay the host's")


@dataclass(frozen=True)
class Setup:
    """Everything ``mokka exec`` changes for the command, in order."""
    #: The staged device nodes, as the lower layer over /dev (the host's /dev below it).
    dev_lower: str
    #: The overlay's binds as the decision gives them to a container (read-only tree,
    #: writable driver/config), here at their own host paths.
    mounts: tuple[Mount, ...]
    #: The proc hook, or None when the node has none staged.
    hook: Hook | None
    #: The command's whole environment.
    env: Mapping[str, str]
    #: The GPU nodes left out of /dev (``nvidiaN``), for a caller who selected GPUs.
    hidden_gpu_nodes: tuple[str, ...] = ()


class Gpu(NamedTuple):
    """One GPU of the staged node, as the state's companion names it."""
    index: int
    uuid: str
    minor: int


#: The caller's MOCK_IB values that select InfiniBand: the plugin's tiers.
IB_TIERS = names.IB_TIERS
#: The values that leave it off (empty: as unset, for the shims and the hook alike).
IB_OFF_VALUES = (None, "", names.IB_OFF)


def ib_problem(environ: Mapping[str, str]) -> str | None:
    """The one line saying the caller's MOCK_IB is none of the tiers, or None."""
    value = environ.get(names.ENV_IB)
    if value in IB_OFF_VALUES or value in IB_TIERS:
        return None
    return BAD_IB.format(value=value)


def visible_gpus(environ: Mapping[str, str], gpus: Sequence[Gpu]) -> tuple[Gpu, ...] | str:
    """The GPUs the caller's NVIDIA_VISIBLE_DEVICES selects, in the node's order (all of
    them when it is unset or ``all``), or the one line saying it names none of them."""
    value = environ.get(names.ENV_NVIDIA_VISIBLE_DEVICES)
    if value is None or value.strip().lower() == names.VISIBLE_ALL:
        return tuple(gpus)
    if value.strip().lower() in NO_GPU_VALUES:
        return ()
    by_name = {name: gpu for gpu in gpus for name in (str(gpu.index), gpu.uuid)}
    entries = [entry.strip() for entry in value.split(",")]
    for entry in entries:
        if entry.startswith("MIG-") or ":" in entry:
            return MIG_VISIBLE.format(value=value, entry=entry)
        if entry not in by_name:
            known = ", ".join(str(gpu.index) for gpu in gpus) or "none staged"
            return BAD_VISIBLE.format(value=value, entry=entry, known=known)
    chosen = {by_name[entry] for entry in entries}
    return tuple(gpu for gpu in gpus if gpu in chosen)


def decide(overlay_root: str, environ: Mapping[str, str], view: inject.NodeView,
           visible: Sequence[Gpu] | None = None) -> Setup:
    """The setup for a command started with ``environ`` on the node staged at ``overlay_root``.

    ``view`` is the node view of that overlay as the NRI plugin builds it
    (``mokka.nri.nodeview``), with the overlay's host path as the mount path.
    ``environ``'s MOCK_IB is one of the tiers, or unset or off (``ib_problem``).
    ``visible``: the GPUs the caller selected (``visible_gpus``); None, every one.
    """
    tier = environ.get(names.ENV_IB)
    infiniband = tier in IB_TIERS
    config = inject.Config(overlay_host_path=overlay_root, overlay_mount_path=overlay_root,
                           **({"infiniband_tier": tier} if infiniband else {}))
    annotations = {config.device_annotation: "true"}
    if infiniband:
        annotations[config.infiniband_annotation] = "true"
    pod = inject.Pod(annotations=annotations)
    container = inject.Container(env=tuple(f"{k}={v}" for k, v in environ.items()))
    decision = inject.adjust(config, pod, container, view)
    adjustment = decision.adjustment or inject.Adjustment()
    env = dict(environ)
    env.update(adjustment.env)
    hook = adjustment.hooks[0] if adjustment.hooks else None
    if hook is not None and names.ENV_IB in env:
        # In its OVERLAY ROOTFS form the hook reads MOCK_IB from its own environment.
        hook = hook._replace(env=(*hook.env, f"{names.ENV_IB}={env[names.ENV_IB]}"))
    hidden: tuple[str, ...] = ()
    if visible is not None:
        kept = {names.gpu_node_name(gpu.minor) for gpu in visible}
        hidden = tuple(name for name in (d.path.rpartition("/")[2] for d in view.dev_nodes)
                       if _is_gpu_node(name) and name not in kept)
        if not visible:
            # With no /dev/nvidiaN at all the mock library would list every GPU of the
            # node (a host's view): told none, it lists none, as a container given none.
            env[names.ENV_NVML_VISIBLE_DEVICES] = names.VISIBLE_NONE
    return Setup(dev_lower=Overlay(overlay_root).dev, mounts=adjustment.mounts, hook=hook, env=env,
                 hidden_gpu_nodes=hidden)


def _is_gpu_node(name: str) -> bool:
    digits = name[len(names.GPU_NODE_PREFIX):]
    return name.startswith(names.GPU_NODE_PREFIX) and digits.isascii() and digits.isdigit()


def hook_argv(hook: Hook) -> list[str]:
    """The hook's argv for ``mokka exec``: its OCI form (name, overlay) plus the root."""
    return [*hook.args, HOOK_ROOTFS]


def has_sys_admin(status: str) -> bool:
    """Whether /proc/self/status's effective capabilities hold CAP_SYS_ADMIN."""
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            try:
                return bool(int(line.split(":", 1)[1].strip(), 16) >> CAP_SYS_ADMIN & 1)
            except ValueError:
                return False
    return False


def unescape(field: str) -> str:
    """A mountinfo path: the kernel writes space, tab, newline and backslash as \\ooo."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def submounts(mountinfo: str, top: str) -> list[str]:
    """The mount points strictly under ``top`` that no other of them contains, in
    mountinfo order, each once (a recursive bind of each carries the ones inside it).

    They are what an overlay mounted on ``top`` would hide: the overlay's lower is
    ``top``'s own filesystem, without what is mounted on it."""
    prefix = top.rstrip("/") + "/"
    points: list[str] = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        point = posixpath.normpath(unescape(fields[4]))
        if point.startswith(prefix) and point not in points:
            points.append(point)
    return [p for p in points
            if not any(p.startswith(q + "/") for q in points if q != p)]
