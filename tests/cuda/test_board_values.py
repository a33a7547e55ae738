"""The state's `cuda` block (mokka.core.cudaboard): what a profile leaves out follows from
its compute capability; what it gives wins."""

from __future__ import annotations

import pytest

from mokka.core import compile as comp
from mokka.core import profile as prof
from mokka.core.cudaboard import fill


@pytest.mark.parametrize("device, want", [
    pytest.param({"compute_capability": {"major": 8, "minor": 0}, "num_gpu_cores": 6912},
                 {"multiprocessor_count": 108, "max_threads_per_multiprocessor": 2048,
                  "max_blocks_per_multiprocessor": 32, "shared_memory_per_multiprocessor_bytes": 167936,
                  "shared_memory_per_block_optin_bytes": 166912, "registers_per_multiprocessor": 65536,
                  "async_engine_count": 2}, id="A100: 64 FP32 lanes per multiprocessor"),
    pytest.param({"compute_capability": {"major": 8, "minor": 9}, "num_gpu_cores": 18176},
                 {"multiprocessor_count": 142, "max_threads_per_multiprocessor": 1536,
                  "max_blocks_per_multiprocessor": 24, "shared_memory_per_multiprocessor_bytes": 102400,
                  "shared_memory_per_block_optin_bytes": 101376, "registers_per_multiprocessor": 65536,
                  "async_engine_count": 2}, id="L40S: 128 lanes"),
    pytest.param({"compute_capability": {"major": 9, "minor": 2}, "num_gpu_cores": 100},
                 {"max_threads_per_multiprocessor": 2048, "max_blocks_per_multiprocessor": 32,
                  "shared_memory_per_multiprocessor_bytes": 233472, "shared_memory_per_block_optin_bytes": 232448,
                  "registers_per_multiprocessor": 65536, "async_engine_count": 2},
                 id="an unknown capability takes the nearest lower one; cores not a multiple: no count"),
    pytest.param({"compute_capability": {"major": 5, "minor": 0}},
                 {"registers_per_multiprocessor": 65536, "async_engine_count": 2}, id="below the table"),
    pytest.param({"compute_capability": {"major": 7, "minor": 5}, "num_gpu_cores": 2560,
                  "cuda": {"multiprocessor_count": 41, "async_engine_count": 3}},
                 {"multiprocessor_count": 41, "max_threads_per_multiprocessor": 1024,
                  "max_blocks_per_multiprocessor": 16, "shared_memory_per_multiprocessor_bytes": 65536,
                  "shared_memory_per_block_optin_bytes": 65536, "registers_per_multiprocessor": 65536,
                  "async_engine_count": 3}, id="the profile's own values win"),
])
def test_fill(device, want):
    assert fill(device) == want


def test_compile_gives_every_gpu_its_block():
    state = comp.compile_profile(prof.load("b200"))
    assert {g["cuda"]["multiprocessor_count"] for g in state["gpus"]} == {148}
    assert "l2_cache_bytes" not in state["gpus"][0]["cuda"]          # the table does not know it
