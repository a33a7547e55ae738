"""What the CUDA driver reports of a board beyond NVML: the state's ``cuda`` block.

A profile may give every value (``device_defaults.cuda``, ``schema.DEVICE_FIELDS``);
``fill`` completes what it leaves out from the board's compute capability: the
per-multiprocessor limits of the CUDA C Programming Guide's table of technical
specifications per compute capability, and the multiprocessor count as the CUDA
cores divided by the FP32 lanes a multiprocessor of that capability has (its
table of arithmetic instruction throughput). A capability the table lacks takes
the nearest lower one's limits. The mock CUDA driver (native/cuda) only reads
the result, through the mock NVML library, so every process sees the same board.

Pure: a function of the device's fields only.
"""

from __future__ import annotations

#: (threads, blocks, shared memory bytes, opt-in shared memory per block bytes,
#: FP32 lanes) per multiprocessor, by compute capability.
_PER_SM = {
    (7, 0): (2048, 32, 98304, 98304, 64),
    (7, 5): (1024, 16, 65536, 65536, 64),
    (8, 0): (2048, 32, 167936, 166912, 64),
    (8, 6): (1536, 16, 102400, 101376, 128),
    (8, 9): (1536, 24, 102400, 101376, 128),
    (9, 0): (2048, 32, 233472, 232448, 128),
    (10, 0): (2048, 32, 233472, 232448, 128),
}
#: 64 K 32-bit registers per multiprocessor on every capability of the table.
REGISTERS_PER_SM = 65536
#: Mokka's own default, not a board fact: a copy engine each way.
ASYNC_ENGINES = 2


def limits(major: int, minor: int) -> tuple[int, int, int, int, int] | None:
    """The table's row for a capability, or the nearest lower one's; None below the table."""
    known = [cc for cc in _PER_SM if cc <= (major, minor)]
    return _PER_SM[max(known)] if known else None


def fill(device: dict) -> dict:
    """The device's ``cuda`` block with every value the profile left out that can be known."""
    block = dict(device.get("cuda") or {})
    cc = device.get("compute_capability") or {}
    row = limits(int(cc.get("major") or 0), int(cc.get("minor") or 0))
    derived = {"registers_per_multiprocessor": REGISTERS_PER_SM, "async_engine_count": ASYNC_ENGINES}
    if row is not None:
        threads, blocks, shared, optin, lanes = row
        derived.update({"max_threads_per_multiprocessor": threads,
                        "max_blocks_per_multiprocessor": blocks,
                        "shared_memory_per_multiprocessor_bytes": shared,
                        "shared_memory_per_block_optin_bytes": optin})
        cores = device.get("num_gpu_cores")
        if isinstance(cores, int) and cores > 0 and cores % lanes == 0:
            derived["multiprocessor_count"] = cores // lanes
    for key, value in derived.items():
        if block.get(key) is None:
            block[key] = value
    return block
