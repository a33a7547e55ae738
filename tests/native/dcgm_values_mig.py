"""dcgm_values.py's checks for the MIG and GPM calls: the h100's seven 1g.10gb instances (GPU 0's
first MIG device where a call takes one), the a100 with MIG off."""

from __future__ import annotations

from tests.native.dcgm_values import (INSUFFICIENT_RESOURCES, INVALID_ARGUMENT, NOT_FOUND, both, handle, per,
                                      text, u64, word)

H100_GI_PROFILE = [19, 0, 1, 7, 16, 1, 1, 0, 1, 0]       # id, p2p, slices, instances, SMs, CE, dec, enc, jpeg, ofa
H100_CI_PROFILE = [0, 1, 1, 16, 1, 1, 0, 1, 0]           # id, slices, instances, SMs, CE, dec, enc, jpeg, ofa

VALUES = {
    # --- GPM ----------------------------------------------------------------------------------
    "nvmlGpmQueryDeviceSupport": per(("supported (Hopper)", lambda o: (word(o), word(o, 0, 1)) == (1, 1)),
                                     ("not supported (Ampere)", lambda o: (word(o), word(o, 0, 1)) == (1, 0))),
    "nvmlGpmSampleAlloc": both("a sample", handle),
    # --- MIG ----------------------------------------------------------------------------------
    "nvmlDeviceGetMaxMigDeviceCount": per(("7 MIG devices", lambda o: word(o) == 7),
                                          ("none while MIG is off", lambda o: word(o) == 0)),
    "nvmlDeviceGetMigMode": per(("on, on", lambda o: (word(o), word(o, 1)) == (1, 1)),
                                ("off, off", lambda o: (word(o), word(o, 1)) == (0, 0))),
    "nvmlDeviceIsMigDeviceHandle": per(("a MIG device's handle", lambda o: word(o) == 1),
                                       ("a GPU's handle", lambda o: word(o) == 0)),
    "nvmlDeviceGetMigDeviceHandleByIndex": {"h100": ("a handle", handle)},
    "nvmlDeviceGetGpuInstanceId": {"h100": ("GPU instance 7", lambda o: word(o) == 7)},
    "nvmlDeviceGetComputeInstanceId": {"h100": ("compute instance 0", lambda o: word(o) == 0)},
    "nvmlDeviceGetAttributes": {"h100": (
        "1g.10gb: 16 SMs, 1 CE, 1 decoder, 1 JPEG, 1 slice, 9984 MiB",
        lambda o: o[0]["u32s"][:8] == [16, 1, 1, 0, 1, 0, 1, 1] and u64(o, 0, 8) == 9984)},
    "nvmlDeviceGetAttributes_v2": {"h100": (
        "1g.10gb: 16 SMs, 1 CE, 1 decoder, 1 JPEG, 1 slice, 9984 MiB",
        lambda o: o[0]["u32s"][:8] == [16, 1, 1, 0, 1, 0, 1, 1] and u64(o, 0, 8) == 9984)},
    "nvmlDeviceGetGpuInstanceProfileInfo": {"h100": (
        "1g.10gb (19): 7 instances of 16 SMs, 9984 MiB",
        lambda o: o[0]["u32s"][:10] == H100_GI_PROFILE and u64(o, 0, 10) == 9984)},
    "nvmlDeviceGetGpuInstanceProfileInfoV": {"h100": (
        "1g.10gb (19): 7 instances of 16 SMs, 9984 MiB, named MIG 1g.10gb",
        lambda o: o[0]["u32s"][1:11] == H100_GI_PROFILE and u64(o, 0, 12) == 9984 and text(o, 0, 14) == "MIG 1g.10gb")},
    # Placements are answered whether MIG is on or off (nvml.h).
    **{name: both("profile id 0 (7g): one placement, slices 0-7",
                  lambda o: (word(o, 0, 0), word(o, 0, 1), word(o, 1)) == (0, 8, 1))
       for name in ("nvmlDeviceGetGpuInstancePossiblePlacements", "nvmlDeviceGetGpuInstancePossiblePlacements_v2")},
    "nvmlDeviceGetGpuInstances": {"h100": (
        "seven 1g.10gb instances", lambda o: word(o, 1) == 7 and len({u64(o, 0, 2 * k) for k in range(7)} - {0}) == 7
        and u64(o, 0, 14) == 0)},
    "nvmlDeviceGetGpuInstanceRemainingCapacity": {"h100": ("no room left", lambda o: word(o) == 0)},
    "nvmlDeviceGetGpuInstanceById": {"h100": ("a handle", handle)},
    "nvmlGpuInstanceGetInfo": {"h100": (
        "GPU 0's instance 7 of profile 19, one slice",
        lambda o: u64(o) != 0 and (word(o, 0, 2), word(o, 0, 3), word(o, 0, 5)) == (7, 19, 1))},
    "nvmlGpuInstanceGetComputeInstanceProfileInfo": {"h100": (
        "1g.10gb: one compute instance of 16 SMs", lambda o: o[0]["u32s"][:9] == H100_CI_PROFILE)},
    "nvmlGpuInstanceGetComputeInstanceProfileInfoV": {"h100": (
        "1g.10gb: one compute instance of 16 SMs, named MIG 1g.10gb",
        lambda o: o[0]["u32s"][1:10] == H100_CI_PROFILE and text(o, 0, 10) == "MIG 1g.10gb")},
    "nvmlGpuInstanceGetComputeInstanceRemainingCapacity": {"h100": ("no room left", lambda o: word(o) == 0)},
    "nvmlGpuInstanceGetComputeInstances": {"h100": (
        "its one compute instance", lambda o: word(o, 1) == 1 and u64(o) != 0 and u64(o, 0, 2) == 0)},
    "nvmlGpuInstanceGetComputeInstanceById": {"h100": ("a handle", handle)},
    # nvmlComputeInstanceInfo_t of the 550 header; the unversioned symbol predates the placement.
    "nvmlComputeInstanceGetInfo": {"h100": (
        "compute instance 0 of profile 0 on a GPU and GPU instance",
        lambda o: u64(o) != 0 and u64(o, 0, 2) != 0 and o[0]["u32s"][4:8] == [0, 0, 0, 0])},
    "nvmlComputeInstanceGetInfo_v2": {"h100": (
        "compute instance 0 of profile 0, placed at slice 0, one slice",
        lambda o: u64(o) != 0 and u64(o, 0, 2) != 0 and o[0]["u32s"][4:8] == [0, 0, 0, 1])},
}

_null_gi = "MIG is off: no GPU or compute instance exists, so the handle is null and NVML answers INVALID_ARGUMENT"

#: function -> board -> (code, why): an answer that is neither SUCCESS nor NOT_SUPPORTED.
CODES = {
    "nvmlDeviceGetMigDeviceHandleByIndex": {"a100": (NOT_FOUND, "MIG is off: index 0 names no MIG device "
                                                                "(nvml.h: NOT_FOUND)")},
    "nvmlDeviceCreateGpuInstance": {"h100": (INSUFFICIENT_RESOURCES, "profile id 0 is 7g.80gb, and seven 1g.10gb "
                                                                     "instances already fill the GPU")},
    "nvmlDeviceCreateGpuInstanceWithPlacement": {"h100": (INVALID_ARGUMENT, "the zeroed placement's size 0 is not "
                                                                            "7g.80gb's 8 slices")},
    "nvmlGpuInstanceCreateComputeInstance": {"h100": (INSUFFICIENT_RESOURCES, "a 1g instance holds one compute "
                                                                              "instance and has it"),
                                             "a100": (INVALID_ARGUMENT, _null_gi)},
    "nvmlGpmSampleFree": both(INVALID_ARGUMENT, "the probe frees a null sample"),
    "nvmlGpmSampleGet": {"h100": (INVALID_ARGUMENT, "the probe passes a null sample")},
    "nvmlGpmMigSampleGet": {"h100": (NOT_FOUND, "no GPU instance has id 0 (only a 7g instance would); the probe "
                                                "also passes a null sample, which the mock checks second")},
    **{name: {"a100": (INVALID_ARGUMENT, _null_gi)} for name in (
        "nvmlComputeInstanceDestroy", "nvmlComputeInstanceGetInfo", "nvmlComputeInstanceGetInfo_v2",
        "nvmlGpuInstanceDestroy", "nvmlGpuInstanceGetComputeInstanceById",
        "nvmlGpuInstanceGetComputeInstanceProfileInfo", "nvmlGpuInstanceGetComputeInstanceProfileInfoV",
        "nvmlGpuInstanceGetComputeInstanceRemainingCapacity", "nvmlGpuInstanceGetComputeInstances",
        "nvmlGpuInstanceGetInfo")},
}
