"""Memory, streams, events, modules and launches of the mock CUDA driver, driven by
NVIDIA's cuda-bindings in a real process (tests/cuda/probe.py memory)."""

from __future__ import annotations

import pytest

from tests.cuda.conftest import node, run_cuda

GiB = 1 << 30
SUCCESS, INVALID_VALUE, OUT_OF_MEMORY, NOT_INITIALIZED = 0, 1, 2, 3
INVALID_CONTEXT, NOT_FOUND, INVALID_HANDLE = 201, 500, 400


@pytest.fixture(scope="module")
def seen(cuda_lib, tmp_path_factory):
    return run_cuda(cuda_lib, node("h100", tmp_path_factory.mktemp("memory")), "memory")


def test_calls_before_init_and_without_a_context_fail_as_the_driver_does(seen):
    assert (seen["before_init"], seen["no_context"]) == (NOT_INITIALIZED, INVALID_CONTEXT)
    assert seen["after_release"] == INVALID_CONTEXT          # the primary context went with its release


def test_device_memory_is_reserved_lazily(seen):
    # h100: 80 GiB less 1 GiB the driver reserves
    assert seen["total"] == 85899345920 - 1073741824
    assert seen["big_free_drop"] == 40 * GiB
    assert seen["big_rss_growth"] < 16 << 20                 # 40 GiB held, one page touched
    assert seen["big_range"] == [0, 40 * GiB]
    assert seen["free_after_free"] == 0
    assert seen["double_free"] == INVALID_VALUE


def test_an_allocation_larger_than_what_is_free_is_out_of_memory(seen):
    assert (seen["too_big"], seen["zero_size"]) == (OUT_OF_MEMORY, INVALID_VALUE)


def test_copies_round_trip_and_never_write_outside_an_allocation(seen):
    assert seen["round_trip"] and seen["async_copy"]
    assert (seen["copy_past_end"], seen["copy_from_nowhere"]) == (INVALID_VALUE, INVALID_VALUE)


def test_fills_and_pitched_2d_copies(seen):
    assert seen["memset32"] and seen["memset16"]
    assert seen["memset32_misaligned"] == INVALID_VALUE
    assert seen["pitch"] == 512
    assert seen["copy2d"] == [True, True, True, True, 0, 0]   # each row in place, nothing beside it


def test_streams_and_events(seen):
    assert (seen["stream_query"], seen["stream_sync"]) == (SUCCESS, SUCCESS)
    assert seen["elapsed_ms_nonnegative"]
    assert seen["elapsed_untimed"] == INVALID_HANDLE
    assert seen["destroyed_stream"] == INVALID_HANDLE


def test_host_memory_and_pointer_attributes(seen):
    assert seen["host_device_pointer_same"]
    assert seen["memory_type"] == [2, 1]                     # CU_MEMORYTYPE_DEVICE, _HOST
    assert seen["ordinal"] == 0 and seen["is_managed"] == 1


def test_modules_are_accepted_and_kernels_launch_as_no_ops(seen):
    assert seen["same_function"]
    assert seen["launch"] == SUCCESS
    assert (seen["launch_block_too_big"], seen["launch_smem_too_big"]) == (INVALID_VALUE, INVALID_VALUE)
    assert seen["global"] == NOT_FOUND
    assert seen["unloaded_function"] == INVALID_HANDLE
    assert seen["context_device"] == 0


def test_error_names_and_strings(seen):
    assert seen["errors"] == {
        "0": ["CUDA_SUCCESS", "no error"],
        "1": ["CUDA_ERROR_INVALID_VALUE", "invalid argument"],
        "2": ["CUDA_ERROR_OUT_OF_MEMORY", "out of memory"],
        "100": ["CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"],
        "201": ["CUDA_ERROR_INVALID_CONTEXT", "invalid device context"],
        "500": ["CUDA_ERROR_NOT_FOUND", "named symbol not found"],
    }


def test_a_child_forked_after_init_cannot_use_cuda(cuda_lib, tmp_path):
    seen = run_cuda(cuda_lib, node("t4", tmp_path), "fork")
    assert seen == {"child": [NOT_INITIALIZED, NOT_INITIALIZED], "parent": SUCCESS}
