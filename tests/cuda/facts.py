"""The per-board values of the CUDA facts (shared/docs/cuda-facts.md §3), as literals.

Only what the table gives for the board a built-in profile names; `None` where the
table has no value (or marks it unverified and the profile does not claim it).
"""

from __future__ import annotations

#: profile -> (compute capability, multiprocessors, max SM clock MHz, memory clock MHz,
#: bus width bits, L2 bytes)
BOARDS = {
    "a100": ((8, 0), 108, 1410, 1215, 5120, 41943040),
    "h100": ((9, 0), 132, 1980, 2619, 5120, 52428800),
    "b200": ((10, 0), 148, 1965, 3996, 8192, None),
    "gb200": ((10, 0), None, 2062, 3996, None, None),
    "gb300": ((10, 0), None, None, None, None, None),
    "l40s": ((8, 9), 142, 2520, 9001, 384, 100663296),
    "t4": ((7, 5), 40, 1590, 5001, 256, 4194304),
}

#: Resident threads per multiprocessor the table gives (A100, L40S, T4), and H100's
#: shared memory per multiprocessor and copy engines.
MAX_THREADS_PER_SM = {"a100": 2048, "l40s": 1536, "t4": 1024}
H100_SHARED_MEMORY_PER_SM = 233472
H100_COPY_ENGINES = 3

#: CUdevice_attribute numbers (cuda.h 12.4).
ATTR = {
    "max_threads_per_block": 1, "max_block_dim_x": 2, "max_block_dim_y": 3, "max_block_dim_z": 4,
    "max_grid_dim_x": 5, "max_grid_dim_y": 6, "max_grid_dim_z": 7, "shared_memory_per_block": 8,
    "total_constant_memory": 9, "warp_size": 10, "max_pitch": 11, "registers_per_block": 12,
    "clock_rate": 13, "texture_alignment": 14, "multiprocessor_count": 16, "pci_bus_id": 33,
    "pci_device_id": 34, "memory_clock_rate": 36, "global_memory_bus_width": 37, "l2_cache_size": 38,
    "max_threads_per_multiprocessor": 39, "async_engine_count": 40, "unified_addressing": 41,
    "pci_domain_id": 50, "cc_major": 75, "cc_minor": 76, "max_shared_memory_per_multiprocessor": 81,
}

#: Values common to every board of the table.
COMMON = {"warp_size": 32, "max_threads_per_block": 1024, "max_block_dim_x": 1024, "max_block_dim_y": 1024,
          "max_block_dim_z": 64, "max_grid_dim_x": 2147483647, "max_grid_dim_y": 65535,
          "max_grid_dim_z": 65535, "shared_memory_per_block": 49152, "registers_per_block": 65536,
          "total_constant_memory": 65536, "max_pitch": 2147483647, "texture_alignment": 512}

#: The 111 attributes cudart 12.4 reads of every device at init, in its order (facts §1).
CUDART_ATTRIBUTES = (
    [75, 76, 15, 40, 16, 17, 18, 19, 21, 77, 69, 22, 23, 73, 74, 70, 71, 72, 45, 46, 24, 25, 26, 47, 48, 49,
     52, 42, 43, 27, 28, 29, 53, 54] + list(range(55, 69)) +
    [31, 32, 33, 34, 50, 35, 41, 36, 37, 38, 108, 39, 30, 51, 8, 97, 81, 12, 82, 10, 11] + list(range(1, 8)) +
    [9, 13, 14, 78, 79, 80] + list(range(83, 92)) + [95, 96, 100, 101, 106, 109, 111, 99] +
    list(range(112, 120)) + [121, 125, 120, 129])
