"""dcgm_values.py's checks for the setters (their getter's read-back after setting the board's
current value), the calls whose SUCCESS carries nothing but the code, and the other codes the
probe's arguments ask for."""

from __future__ import annotations

from tests.native.dcgm_values import INVALID_ARGUMENT, NOT_FOUND, TIMEOUT, both, per, u64, word

VALUES = {
    "nvmlDeviceSetPowerManagementLimit": per(("reads back 700 W", lambda o: word(o) == 700000),
                                             ("reads back 400 W", lambda o: word(o) == 400000)),
    "nvmlDeviceSetPersistenceMode": both("reads back on", lambda o: word(o) == 1),
    "nvmlDeviceSetComputeMode": both("reads back Default", lambda o: word(o) == 0),
    "nvmlDeviceSetAccountingMode": both("reads back off", lambda o: word(o) == 0),
    "nvmlDeviceSetEccMode": both("reads back on, on", lambda o: (word(o), word(o, 1)) == (1, 1)),
    "nvmlDeviceSetMigMode": per(("reads back on, on", lambda o: (word(o), word(o, 1)) == (1, 1)),
                                ("reads back off, off", lambda o: (word(o), word(o, 1)) == (0, 0))),
    "nvmlDeviceSetApplicationsClocks": per(("reads back 1980 MHz", lambda o: word(o) == 1980),
                                           ("reads back 1095 MHz", lambda o: word(o) == 1095)),
    "nvmlDeviceResetApplicationsClocks": per(("reads back the default 1980 MHz", lambda o: word(o) == 1980),
                                             ("reads back the default 1095 MHz", lambda o: word(o) == 1095)),
    "nvmlDeviceSetAPIRestriction": both("application clocks unrestricted: reads back 0", lambda o: word(o) == 0),
    "nvmlDeviceSetGpcClkVfOffset": both("reads back no offset", lambda o: word(o) == 0),
    "nvmlDeviceSetMemClkVfOffset": both("reads back no offset", lambda o: word(o) == 0),
    "nvmlDeviceClearEccErrorCounts": both("reads back 0 corrected", lambda o: u64(o) == 0),
    "nvmlDeviceClearAccountingPids": both("reads back no pid", lambda o: word(o) == 0),
    "nvmlDeviceResetNvLinkErrorCounters": both("reads back no replay errors", lambda o: u64(o) == 0),
}

_destroy = "a destroy answers only whether the instance is gone"
_locked = "NVML 550 has no getter for locked clocks: the code is the answer"

#: function -> why its SUCCESS carries nothing but the code.
RC_ONLY = {
    "nvmlInit_v2": "initialization answers only its code",
    "nvmlInitWithFlags": "initialization answers only its code",
    "nvmlShutdown": "shutdown answers only its code",
    "nvmlDeviceValidateInforom": "validation answers only whether the InfoROM is valid (SUCCESS: it is)",
    "nvmlDeviceRegisterEvents": "registering writes into the event set; a wait reads it (nvmlEventSetWait)",
    "nvmlGpuInstanceDestroy": _destroy,
    "nvmlComputeInstanceDestroy": _destroy,
    "nvmlDeviceSetGpuLockedClocks": _locked,
    "nvmlDeviceResetGpuLockedClocks": _locked,
    "nvmlDeviceSetMemoryLockedClocks": _locked,
    "nvmlDeviceResetMemoryLockedClocks": _locked,
    "nvmlDeviceSetCpuAffinity": "sets the calling thread's affinity, which NVML does not report back",
    "nvmlDeviceClearCpuAffinity": "clears the calling thread's affinity, which NVML does not report back",
}

#: function -> board -> (code, why): an answer that is neither SUCCESS nor NOT_SUPPORTED.
CODES = {
    "nvmlDeviceGetAccountingStats": both(NOT_FOUND, "pid 0 has no accounting record (nvml.h: NOT_FOUND)"),
    "nvmlDeviceGetProcessUtilization": {"a100": (NOT_FOUND, "no process ran since timestamp 0 (nvml.h: NOT_FOUND "
                                                            "when no sample entries are found)")},
    "nvmlGetExcludedDeviceInfoByIndex": both(INVALID_ARGUMENT, "no GPU is excluded, so index 0 is invalid "
                                                                "(nvml.h: INVALID_ARGUMENT)"),
    "nvmlEventSetWait": both(TIMEOUT, "no event arrives within the 0 ms timeout"),
    "nvmlEventSetWait_v2": both(TIMEOUT, "no event arrives within the 0 ms timeout"),
}
