"""GPU and compute instances through NVML: what ``nvidia-smi mig`` and ``-mig`` read and change.

Plumbing over mokka.engine.nvml, as gpu.py is for readings: every function is a few NVML
calls and returns plain values and NVML's return codes; where an instance goes and
what is left of a board are the library's to decide. The orders are the ones NVIDIA's
nvidia-smi lists in: GPU instances by profile index, then id; compute instances of a
GPU instance by profile index, then id.
"""

from __future__ import annotations

import ctypes as C
from dataclasses import dataclass

from mokka.engine import nvml
from mokka.smi.gpu import Gpu

#: NVML_GPU_INSTANCE_PROFILE_* and NVML_COMPUTE_INSTANCE_PROFILE_* indices asked about (a
#: board answers NOT_SUPPORTED or INVALID_ARGUMENT for those it has not).
GI_PROFILE_INDICES = range(17)
CI_PROFILE_INDICES = range(8)
ENGINE_PROFILE_SHARED = 0
MIG_DISABLE, MIG_ENABLE = 0, 1


def _types():
    from mokka.engine import nvml_types
    return nvml_types


def _versioned(ctype, version: int):
    out = ctype()
    out.version = _types().struct_version(ctype, version)
    return out


@dataclass
class Profile:
    """A GPU instance profile (nvmlGpuInstanceProfileInfo_v3) or a compute instance one."""
    index: int
    info: object

    @property
    def id(self) -> int:
        return self.info.id

    @property
    def name(self) -> str:
        return self.info.name.decode(errors="replace")


@dataclass
class GpuInstance:
    gpu: Gpu
    handle: C.c_void_p
    info: object                  # nvmlGpuInstanceInfo_t
    profile: Profile

    @property
    def id(self) -> int:
        return self.info.id


@dataclass
class ComputeInstance:
    gpu_instance: GpuInstance
    handle: C.c_void_p
    info: object                  # nvmlComputeInstanceInfo_t
    profile: Profile

    @property
    def id(self) -> int:
        return self.info.id


def set_mig_mode(gpu: Gpu, mode: int) -> tuple[int, int]:
    """(NVML's code, the activation status it reports)."""
    status = C.c_int(0)
    code = gpu.lib.ask("nvmlDeviceSetMigMode", gpu.handle, C.c_uint(mode), C.byref(status))
    return code, status.value


# --- GPU instances ---------------------------------------------------------------------

def gpu_profiles(gpu: Gpu) -> list[Profile]:
    """The board's GPU instance profiles, by index."""
    out = []
    for index in GI_PROFILE_INDICES:
        info = _versioned(_types().GpuInstanceProfileInfo, 3)
        if gpu.lib.ask("nvmlDeviceGetGpuInstanceProfileInfoV", gpu.handle, C.c_uint(index),
                       C.byref(info)) == nvml.SUCCESS:
            out.append(Profile(index, info))
    return out


def listing_order(profiles: list[Profile]) -> list[Profile]:
    """The order nvidia-smi's -lgip and -lgipp print profiles in: smallest first (slices, then
    memory), then by index."""
    return sorted(profiles, key=lambda p: (p.info.sliceCount, p.info.memorySizeMB, p.index))


def gpu_placements(gpu: Gpu, profile: Profile) -> list[tuple[int, int]]:
    count = C.c_uint(0)
    if gpu.lib.ask("nvmlDeviceGetGpuInstancePossiblePlacements_v2", gpu.handle, C.c_uint(profile.id), None,
                   C.byref(count)) != nvml.SUCCESS:
        return []
    array = (_types().Placement * max(count.value, 1))()
    if gpu.lib.ask("nvmlDeviceGetGpuInstancePossiblePlacements_v2", gpu.handle, C.c_uint(profile.id), array,
                   C.byref(count)) != nvml.SUCCESS:
        return []
    return [(p.start, p.size) for p in array[:count.value]]


def gpu_capacity(gpu: Gpu, profile: Profile) -> int | None:
    count = C.c_uint(0)
    ok = gpu.lib.ask("nvmlDeviceGetGpuInstanceRemainingCapacity", gpu.handle, C.c_uint(profile.id),
                     C.byref(count)) == nvml.SUCCESS
    return count.value if ok else None


def _gi_of(gpu: Gpu, handle: C.c_void_p, profile: Profile) -> GpuInstance | None:
    info = _types().GpuInstanceInfo()
    if gpu.lib.ask("nvmlGpuInstanceGetInfo", handle, C.byref(info)) != nvml.SUCCESS:
        return None
    return GpuInstance(gpu, handle, info, profile)


def gpu_instances(gpu: Gpu, profiles: list[Profile] | None = None) -> list[GpuInstance]:
    out = []
    for profile in profiles if profiles is not None else gpu_profiles(gpu):
        room = max(profile.info.instanceCount, 1)
        handles = (C.c_void_p * room)()
        count = C.c_uint(room)
        if gpu.lib.ask("nvmlDeviceGetGpuInstances", gpu.handle, C.c_uint(profile.id), handles,
                       C.byref(count)) != nvml.SUCCESS:
            continue
        found = [_gi_of(gpu, C.c_void_p(h), profile) for h in handles[:min(count.value, room)]]
        out += sorted((gi for gi in found if gi), key=lambda gi: gi.id)
    return out


def create_gpu_instance(gpu: Gpu, profile: Profile, start: int | None) -> tuple[int, GpuInstance | None]:
    handle = C.c_void_p()
    if start is None:
        code = gpu.lib.ask("nvmlDeviceCreateGpuInstance", gpu.handle, C.c_uint(profile.id), C.byref(handle))
    else:
        placement = _types().Placement(start, _placement_size(gpu, profile))
        code = gpu.lib.ask("nvmlDeviceCreateGpuInstanceWithPlacement", gpu.handle, C.c_uint(profile.id),
                           C.byref(placement), C.byref(handle))
    return code, (_gi_of(gpu, handle, profile) if code == nvml.SUCCESS else None)


def _placement_size(gpu: Gpu, profile: Profile) -> int:
    """The size of the profile's placements (all of them have one)."""
    sizes = {size for _, size in gpu_placements(gpu, profile)}
    return sizes.pop() if len(sizes) == 1 else 0


def destroy_gpu_instance(gi: GpuInstance) -> int:
    return gi.gpu.lib.ask("nvmlGpuInstanceDestroy", gi.handle)


# --- compute instances -------------------------------------------------------------------

def compute_profiles(gi: GpuInstance) -> list[Profile]:
    out = []
    for index in CI_PROFILE_INDICES:
        info = _versioned(_types().ComputeInstanceProfileInfo, 3)
        if gi.gpu.lib.ask("nvmlGpuInstanceGetComputeInstanceProfileInfoV", gi.handle, C.c_uint(index),
                          C.c_uint(ENGINE_PROFILE_SHARED), C.byref(info)) == nvml.SUCCESS:
            out.append(Profile(index, info))
    return out


def default_compute_profile(gi: GpuInstance, profiles: list[Profile]) -> Profile | None:
    """What ``-C`` and a bare ``-cci`` create: the compute instance as large as the GPU instance."""
    whole = [p for p in profiles if p.info.sliceCount == gi.profile.info.sliceCount]
    return whole[0] if whole else None


def compute_capacity(gi: GpuInstance, profile: Profile) -> int | None:
    count = C.c_uint(0)
    ok = gi.gpu.lib.ask("nvmlGpuInstanceGetComputeInstanceRemainingCapacity", gi.handle, C.c_uint(profile.id),
                        C.byref(count)) == nvml.SUCCESS
    return count.value if ok else None


def compute_placements(gi: GpuInstance, profile: Profile) -> list[tuple[int, int]]:
    count = C.c_uint(0)
    lib = gi.gpu.lib
    if lib.ask("nvmlGpuInstanceGetComputeInstancePossiblePlacements", gi.handle, C.c_uint(profile.id), None,
               C.byref(count)) != nvml.SUCCESS:
        return []
    array = (_types().Placement * max(count.value, 1))()
    if lib.ask("nvmlGpuInstanceGetComputeInstancePossiblePlacements", gi.handle, C.c_uint(profile.id), array,
               C.byref(count)) != nvml.SUCCESS:
        return []
    return [(p.start, p.size) for p in array[:count.value]]


def _ci_of(gi: GpuInstance, handle: C.c_void_p, profile: Profile) -> ComputeInstance | None:
    info = _types().ComputeInstanceInfo()
    if gi.gpu.lib.ask("nvmlComputeInstanceGetInfo_v2", handle, C.byref(info)) != nvml.SUCCESS:
        return None
    return ComputeInstance(gi, handle, info, profile)


def compute_instances(gi: GpuInstance, profiles: list[Profile] | None = None) -> list[ComputeInstance]:
    out = []
    for profile in profiles if profiles is not None else compute_profiles(gi):
        room = max(profile.info.instanceCount, 1)
        handles = (C.c_void_p * room)()
        count = C.c_uint(room)
        if gi.gpu.lib.ask("nvmlGpuInstanceGetComputeInstances", gi.handle, C.c_uint(profile.id), handles,
                          C.byref(count)) != nvml.SUCCESS:
            continue
        found = [_ci_of(gi, C.c_void_p(h), profile) for h in handles[:min(count.value, room)]]
        out += sorted((ci for ci in found if ci), key=lambda ci: ci.id)
    return out


def create_compute_instance(gi: GpuInstance, profile: Profile) -> tuple[int, ComputeInstance | None]:
    handle = C.c_void_p()
    code = gi.gpu.lib.ask("nvmlGpuInstanceCreateComputeInstance", gi.handle, C.c_uint(profile.id),
                          C.byref(handle))
    return code, (_ci_of(gi, handle, profile) if code == nvml.SUCCESS else None)


def destroy_compute_instance(ci: ComputeInstance) -> int:
    return ci.gpu_instance.gpu.lib.ask("nvmlComputeInstanceDestroy", ci.handle)
