"""Values the report tests give a GPU through its overrides, shared by the ctypes and
the nvidia-smi 550 tests of the 580 report's rows."""

from __future__ import annotations

#: An ecc.sram block with a distinct count everywhere.
SRAM = {"volatile": {"correctable": 5, "uncorrectable_parity": 2, "uncorrectable_secded": 3},
        "aggregate": {"correctable": 50, "uncorrectable_parity": 20, "uncorrectable_secded": 30},
        "threshold_exceeded": True,
        "uncorrectable_sources": {"l2": 1, "sm": 2, "microcontroller": 3, "pcie": 4, "other": 5}}
