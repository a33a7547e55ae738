"""dcgm_values.py's checks for the calls newer than the 550 nvml.h (nvml_newer.h declares them):
the thermal margin, the unrepairable memory flag and a system event set's life.
test_nvml_newer.py pins them further at a pinned second."""

from __future__ import annotations

from tests.native.dcgm_values import TIMEOUT, both, signed, word

#: nvmlMarginTemperature_v1_t is {version, margin}; the unrepairable flag a bare unsigned int;
#: nvmlSystemEventSetCreateRequest_v1_t {version, set}.
VALUES = {
    "nvmlDeviceGetMarginTemperature": both("some degrees below the nearest slowdown (the board idles cool)",
                                           lambda o: 0 < signed(word(o, 0, 1)) < 100),
    "nvmlDeviceGetUnrepairableMemoryFlag": {"h100": ("no unrepairable memory on a fresh node",
                                                     lambda o: word(o) == 0)},
    "nvmlSystemEventSetCreate": both("a set", lambda o: word(o, 0, 2) | word(o, 0, 3) != 0),
}

RC_ONLY = {
    "nvmlSystemRegisterEvents": "registering writes into the set; a wait reads it (nvmlSystemEventSetWait)",
    "nvmlSystemEventSetFree": "freeing answers only whether the set is gone",
}

CODES = {
    "nvmlSystemEventSetWait": both(TIMEOUT, "no GPU is bound to or unbound from the driver on a Mokka node: "
                                            "the wait times out"),
}
