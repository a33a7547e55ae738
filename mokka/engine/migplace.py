"""Where GPU instances go, asked of the mock NVML library: the one placement rule.

The library places a GPU instance created without a placement as NVIDIA's driver
does (native/nvml/mig/mig_rules.c); runtime creation (``nvidia-smi mig -cgi``,
mig-parted) goes through it, and so does the boot layout compile plans
(mokka.core.mig.plan_layout), through the private ``nvmlMokkaMigPlaceGpuInstances``
of the library this package carries (mokka.engine.native: the zipapp's own, or a
checkout's build). No rule of placement is written here.

Import-light: ctypes and the names only.
"""

from __future__ import annotations

import ctypes
from typing import Sequence

from mokka.core import names

FUNCTION = "nvmlMokkaMigPlaceGpuInstances"
#: A profile's row (MOKKA_MIG_PLACE_ROW): instances, placement size, how many placements,
#: then their starts (a GPU has 8 memory slices, so 8 placements at most).
ROW = 11
STARTS = ROW - 3

_function = None


class EngineMissing(RuntimeError):
    """No mock library to ask: one line for the user."""


def _place_function():
    global _function
    if _function is None:
        from mokka.engine import native

        path = native.nvml_library()
        if path is None:
            raise EngineMissing(f"no mock {names.NVML_LIB_FILE} to place MIG instances with: build it "
                                "with 'python3 native/build.py'")
        try:
            f = getattr(ctypes.CDLL(path), FUNCTION)
        except (OSError, AttributeError) as exc:
            raise EngineMissing(f"{path} cannot place MIG instances ({FUNCTION}): {exc}") from None
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_uint, ctypes.POINTER(ctypes.c_uint), ctypes.c_uint,
                      ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                      ctypes.POINTER(ctypes.c_uint)]
        _function = f
    return _function


def place(profiles: Sequence[dict], create: Sequence[int]) -> tuple[list[int], int]:
    """Create GPU instances of ``profiles[i]`` for each i of ``create``, in order, on an
    empty GPU, each where the library's CreateGpuInstance puts it: (the starts of those
    placed, the NVML return code: mokka.engine.nvml's SUCCESS, or INSUFFICIENT_RESOURCES
    at the first that does not fit). ``profiles``: a board's ``mig.gpu_instance_profiles``."""
    rows = []
    for p in profiles:
        starts = list(p.get("placements") or ())[:STARTS]
        rows += [int(p.get("instances", 0)), int(p.get("placement_size", 0)), len(starts)]
        rows += starts + [0] * (STARTS - len(starts))
    table = (ctypes.c_uint * max(len(rows), 1))(*rows)
    wanted = (ctypes.c_uint * max(len(create), 1))(*create)
    starts_out = (ctypes.c_uint * max(len(create), 1))()
    placed = ctypes.c_uint(0)
    code = _place_function()(len(profiles), table, len(create), wanted, starts_out, ctypes.byref(placed))
    return list(starts_out[:placed.value]), code
