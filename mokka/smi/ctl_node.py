"""The GPUs ``mokka ctl`` acts on, as the mock NVML library names them: each one's
index as this process sees it, its physical index (what the overrides are keyed by)
and UUID, a MIG device's instance ids, its board's limits, its PCI bus id; and what a
reset does beside dropping the overrides (the drain state, NVML's setters' settings)."""

from __future__ import annotations

import ctypes

from mokka.core import names
from mokka.engine import nvml


class Fail(Exception):
    """One line for the user: what cannot be done and why; exit status 1."""


class Target:
    """A GPU ctl acts on: its index as this process sees it, its physical index
    (what the overrides are keyed by), its UUID; for ``xid``, the GPU and compute
    instance ids of the MIG device it names (None: not named)."""

    def __init__(self, index: int, physical: int, uuid: str, gi: int | None = None, ci: int | None = None):
        self.index, self.physical, self.uuid = index, physical, uuid
        self.gi, self.ci = gi, ci


def named(target: Target) -> str:
    return f"GPU {target.index} ({target.uuid})"


def targets(lib) -> list:
    out = []
    for i in range(lib.count()):
        physical, uuid = lib.identity(i)
        out.append(Target(i, physical, uuid))
    return out


def target(gpus: list, ident: str) -> Target:
    from mokka.smi.ctl import ascii_int, shown

    index = ascii_int(ident)                      # ASCII digits only, as nvidia-smi -i takes them
    for t in gpus:
        if index == t.index or ident.lower() == t.uuid.lower():
            return t
    raise Fail(f"{shown(ident)}: no such GPU here (give an index from 0 to {len(gpus) - 1} or a UUID)")


def mig_devices(lib, t: Target) -> list[tuple[str, int, int]]:
    """(UUID, GPU instance id, compute instance id) of each MIG device of ``t``."""
    from mokka.smi.gpu import Gpu
    try:
        gpu = Gpu(lib, t.index, lib.handle(t.index))
    except nvml.NvmlError:
        return []                                    # a lost GPU lists none
    return [(m.uuid() or "", *m.instance_ids()) for m in gpu.mig_devices()]


def xid_target(lib, gpus: list, ident: str) -> Target:
    """The GPU, or the MIG device, ``ctl xid`` raises its Xid on."""
    from mokka.smi.ctl import CtlError, parse_instance_target, shown

    if ident[:4].upper() == "MIG-":
        for t in gpus:
            for uuid, gi, ci in mig_devices(lib, t):
                if uuid.lower() == ident.lower():
                    return Target(t.index, t.physical, t.uuid, gi, ci)
        raise Fail(f"{shown(ident)}: no such MIG device here (nvidia-smi -L lists them)")
    try:
        gpu, gi, ci = parse_instance_target(ident)
    except CtlError as exc:
        raise Fail(str(exc))
    t = target(gpus, gpu)
    if gi is None:
        return t
    instances = sorted({(g, c) for _, g, c in mig_devices(lib, t)})
    if (gi, ci) not in instances and not (ci is None and gi in {g for g, _ in instances}):
        have = ", ".join(f"{g}:{c}" for g, c in instances) or "none: MIG is off or no instance exists"
        raise Fail(f"{shown(ident)}: GPU {t.index} has no MIG device there (its GPU:compute "
                   f"instances: {have})")
    return Target(t.index, t.physical, t.uuid, gi, ci)


def board(lib, t: Target) -> dict:
    """The limits of ``t``'s board (ctl.board_limits) from the node's compiled state:
    the companion of the profile the library loaded, read as every file there is."""
    from mokka.core import fsutil
    from mokka.engine import flatstate
    from mokka.smi import ctl

    path = flatstate.companion_path(lib.node_path(names.NODE_PATH_PROFILE))
    try:
        text = fsutil.read_bounded(path, names.MAX_STATE_COMPANION_BYTES, follow=False)
    except (OSError, fsutil.ReadRefused) as exc:
        raise Fail(f"cannot read the board's limits from {path}: "
                   f"{getattr(exc, 'strerror', None) or exc}; run this again once the node agent "
                   "has staged it")
    return ctl.board_limits(text, t.physical)


def handle(lib, t: Target):
    """The GPU's handle; a GPU NVML cannot open (lost: ctl set GPU lost=true) is one line."""
    try:
        return lib.handle(t.index)
    except nvml.NvmlError as exc:
        raise Fail(f"{named(t)}: {exc}; nothing injected")


def bus_id(lib, t: Target) -> str:
    from mokka.smi.gpu import Gpu
    try:
        return Gpu(lib, t.index, lib.handle(t.index)).bus_id()
    except nvml.NvmlError as exc:
        raise Fail(f"GPU {t.index}: {exc}")


def undrain(lib, t: Target) -> bool:
    """A reset takes the GPU out of the drain state too (mokka.smi.drain.undrain)."""
    from mokka.smi import drain
    try:
        return drain.undrain(lib, t.index)
    except nvml.NvmlError as exc:
        raise Fail(f"{named(t)}: cannot leave the drain state: {exc}")


def reset_settings(lib, physical: list) -> None:
    """What NVML's setters set goes back to the board's, as a reset does (the library keeps
    the settings and is their one writer)."""
    for index in physical:
        try:
            lib.call("nvmlMokkaResetDeviceSettings", ctypes.c_uint(index))
        except nvml.NvmlError as exc:
            raise Fail(f"GPU {index}: its settings (power limit, clocks, modes) cannot be reset: {exc}; "
                       "run this as the owner of the driver config directory")
