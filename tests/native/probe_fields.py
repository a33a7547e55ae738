"""Runs inside a process that loads the mock libnvidia-ml.so.1: asks GPU 0 for each NVML field
id given, one nvmlDeviceGetFieldValues call each, as DCGM's cache manager does.

    probe_fields.py ID[:SCOPE] ...

Prints one JSON object: "ID" or "ID:SCOPE" -> [nvmlReturn, valueType, the value's 64 bits].
"""

from __future__ import annotations

import ctypes
import json
import sys


class FieldValue(ctypes.Structure):         # nvmlFieldValue_t
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]


def main() -> int:
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    assert lib.nvmlInit_v2() == 0
    device = ctypes.c_void_p()
    assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(device)) == 0
    out = {}
    for spec in sys.argv[1:]:
        field, _, scope = spec.partition(":")
        value = FieldValue(fieldId=int(field), scopeId=int(scope or 0))
        assert lib.nvmlDeviceGetFieldValues(device, 1, ctypes.byref(value)) == 0
        out[spec] = [value.nvmlReturn, value.valueType, value.value]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
