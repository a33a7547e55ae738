"""MIG as the driver numbers and names it: capability minors, the proc files, the MIG
devices NVML reports, and the placements of a profile's boot layout.

The driver gives every GPU instance and compute instance a capability: a minor of the
``nvidia-caps`` major (``/dev/nvidia-caps/nvidia-cap<minor>``), listed in
``/proc/driver/nvidia-caps/mig-minors``, with an ``access`` file under
``/proc/driver/nvidia/capabilities/gpu<gpu minor>/mig/``. The numbering is fixed by
the driver (names.MIG_CAP_*), whether the instance exists or not.

Pure: functions of their arguments.
"""

from __future__ import annotations

import posixpath
from typing import NamedTuple, Sequence

from mokka.core import names

ENABLED = "enabled"


class MigDevice(NamedTuple):
    """One MIG device as NVML reports it (a compute instance of a GPU instance)."""
    parent_index: int        # the parent's NVML index, as the agent's reader sees every GPU
    parent_minor: int        # the parent's /dev/nvidia<minor>
    index: int               # nvmlDeviceGetMigDeviceHandleByIndex's index on the parent
    uuid: str                # "MIG-…"
    gpu_instance: int        # GPU instance id
    compute_instance: int    # compute instance id within it


def has_capabilities(gpu_minor: int, gpu_instance: int, compute_instance: int = 0) -> bool:
    """Whether the driver numbers this GPU's instance (gpu0..31, gi0..14, ci0..7)."""
    return (0 <= gpu_minor < names.MIG_MINORS_GPUS and 0 <= gpu_instance < names.MIG_GPU_INSTANCE_IDS
            and 0 <= compute_instance < names.MIG_COMPUTE_INSTANCE_IDS)


def gi_minor(gpu_minor: int, gpu_instance: int) -> int:
    return (names.MIG_CAP_FIRST_MINOR + names.MIG_CAP_MINORS_PER_GPU * gpu_minor
            + names.MIG_CAP_MINORS_PER_GI * gpu_instance)


def ci_minor(gpu_minor: int, gpu_instance: int, compute_instance: int) -> int:
    return gi_minor(gpu_minor, gpu_instance) + 1 + compute_instance


def gi_capability(gpu_minor: int, gpu_instance: int) -> str:
    """``gpu<m>/mig/gi<g>``: the GPU instance's capability directory under capabilities/."""
    return f"gpu{gpu_minor}/mig/gi{gpu_instance}"


def ci_capability(gpu_minor: int, gpu_instance: int, compute_instance: int) -> str:
    return f"{gi_capability(gpu_minor, gpu_instance)}/ci{compute_instance}"


def mig_minors_text() -> str:
    """``/proc/driver/nvidia-caps/mig-minors``, as the driver writes it (every GPU it numbers)."""
    lines = [f"{names.PROC_MIG_CONFIG} {names.MIG_CAP_CONFIG_MINOR}",
             f"{names.PROC_MIG_MONITOR} {names.MIG_CAP_MONITOR_MINOR}"]
    for m in range(names.MIG_MINORS_GPUS):
        for g in range(names.MIG_GPU_INSTANCE_IDS):
            lines.append(f"gpu{m}/gi{g}/{names.PROC_MIG_ACCESS} {gi_minor(m, g)}")
            lines += [f"gpu{m}/gi{g}/ci{c}/{names.PROC_MIG_ACCESS} {ci_minor(m, g, c)}"
                      for c in range(names.MIG_COMPUTE_INSTANCE_IDS)]
    return "\n".join(lines) + "\n"


def access_text(minor: int, mode: int) -> str:
    """A capability's proc file: the device node ``nvidia-modprobe -f`` makes for it."""
    return f"DeviceFileMinor: {minor}\nDeviceFileMode: {mode}\nDeviceFileModify: 1\n"


def access_file(capability: str) -> str:
    """A capability's proc file under DRIVER_PROC_DIR (``capabilities/<capability>/access``)."""
    return posixpath.join("capabilities", capability, names.PROC_MIG_ACCESS)


def cap_node_name(minor: int) -> str:
    return f"{names.NVIDIA_CAP_PREFIX}{minor}"


def device_minors(device: MigDevice) -> tuple[int, int]:
    """(GPU instance minor, compute instance minor) of a MIG device."""
    return (gi_minor(device.parent_minor, device.gpu_instance),
            ci_minor(device.parent_minor, device.gpu_instance, device.compute_instance))


# --- a profile's boot layout ----------------------------------------------------------

class LayoutError(ValueError):
    """A layout that names no profile of the board, or does not fit it."""


def plan_layout(profiles: Sequence[dict], wanted: Sequence[str]) -> list[dict]:
    """The GPU instances a layout creates, each with a placement that fits.

    ``profiles``: a GPU's ``mig.gpu_instance_profiles``; ``wanted``: their names, in
    order. Each instance gets one of its profile's placements (memory slices) so that
    none overlaps and no profile has more than its ``instances``: the first such
    assignment, trying every instance's placements in the order the profile lists them.
    """
    by_name = {p.get("name"): p for p in profiles}
    chosen = []
    for name in wanted:
        profile = by_name.get(name)
        if profile is None:
            raise LayoutError(f"{name!r} is not one of this board's GPU instance profiles ("
                              + ", ".join(str(p.get("name")) for p in profiles) + ")")
        chosen.append(profile)
    starts: list[int] = []
    if not _place(chosen, 0, set(), {}, starts):
        raise LayoutError(f"{', '.join(wanted)} do not fit the board's memory slices together")
    return [{"profile_id": p["id"], "placement_start": start, "placement_size": p["placement_size"]}
            for p, start in zip(chosen, starts)]


def _place(chosen: list[dict], at: int, used: set[int], counts: dict[int, int],
           starts: list[int]) -> bool:
    if at == len(chosen):
        return True
    profile = chosen[at]
    if counts.get(profile["id"], 0) >= profile.get("instances", 0):
        return False
    size = profile.get("placement_size", 0)
    for start in profile.get("placements") or ():
        slots = set(range(start, start + size))
        if slots & used:
            continue
        counts[profile["id"]] = counts.get(profile["id"], 0) + 1
        starts.append(start)
        if _place(chosen, at + 1, used | slots, counts, starts):
            return True
        starts.pop()
        counts[profile["id"]] -= 1
    return False
