"""MIG as the driver numbers and names it: capability minors, the proc files, the MIG
devices NVML reports, and the placements of a profile's boot layout.

The driver gives every GPU instance and compute instance a capability: a minor of the
``nvidia-caps`` major (``/dev/nvidia-caps/nvidia-cap<minor>``), listed in
``/proc/driver/nvidia-caps/mig-minors``, with an ``access`` file under
``/proc/driver/nvidia/capabilities/gpu<gpu minor>/mig/``. The numbering is fixed by
the driver (names.MIG_CAP_*), whether the instance exists or not.

Pure: functions of their arguments, but for the boot layout's placements, which the mock
library decides (plan_layout: the one placement rule is native/nvml/mig/mig_rules.c's).
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
    """The GPU instances a layout creates, in the order they are created, each with the
    placement the mock library gives it.

    ``profiles``: a GPU's ``mig.gpu_instance_profiles``; ``wanted``: their names. The
    layout is applied as mig-parted applies a config (pkg/mig/config: ``Flatten`` sorts
    the instances largest first, then ``iteratePermutationsUntilSuccess`` tries each
    distinct order in turn on a cleared GPU): the first order in which every
    CreateGpuInstance succeeds wins. Where each goes is the library's one placement rule
    (native/nvml/mig/mig_rules.c, asked through mokka.engine.migplace), the rule runtime
    creation follows too. LayoutError when no order fits.
    """
    by_name = {p.get("name"): n for n, p in enumerate(profiles)}
    chosen = []
    for name in wanted:
        if name not in by_name:
            raise LayoutError(f"{name!r} is not one of this board's GPU instance profiles ("
                              + ", ".join(str(p.get("name")) for p in profiles) + ")")
        chosen.append(by_name[name])
    if not chosen:
        return []                           # nothing to place: no library to ask
    from mokka.engine import migplace, nvml

    chosen.sort(key=lambda n: _attributes(profiles[n]), reverse=True)     # stable: the last key first
    chosen.sort(key=lambda n: _slices(profiles[n]))
    for order in _mig_parted_orders(chosen):
        starts, code = migplace.place(profiles, order)
        if code == nvml.SUCCESS:
            return [{"profile_id": profiles[n]["id"], "placement_start": start,
                     "placement_size": profiles[n]["placement_size"]} for n, start in zip(order, starts)]
    raise LayoutError(f"{', '.join(wanted)} do not fit the board's memory slices together "
                      "in any order mig-parted creates them")


def _slices(profile: dict) -> int:
    """mig-parted's MigConfig.Flatten order: more GPU slices first (then more compute
    slices, which a GPU instance's default compute instance has as many of), then the
    attributes (``+me``, ...) descending (_attributes)."""
    return -int(profile.get("slices") or 0)


def _attributes(profile: dict) -> str:
    return str(profile.get("name", "")).partition("+")[2]


def _mig_parted_orders(items: list[int]):
    """Each distinct order of ``items``, as mig-parted's iteratePermutationsUntilSuccess
    visits them: swap item j into place i unless an equal item already was."""
    items = list(items)

    def visit(i: int):
        if i >= len(items):
            yield list(items)
            return
        for j in range(i, len(items)):
            if items[j] in items[i:j]:
                continue
            items[i], items[j] = items[j], items[i]
            yield from visit(i + 1)
            items[i], items[j] = items[j], items[i]
    return visit(0)
