"""The JIT linker (cuLink*) of the mock CUDA driver, driven by NVIDIA's cuda-bindings and by
ctypes in a real process (tests/cuda/probe.py link): accepted, and nothing executes. A link
completes to an image the state owns, which loads as a module whose kernels launch as no-ops;
the log options read back empty; the argument checks are the driver's."""

from __future__ import annotations

import pytest

from tests.cuda.conftest import node, run_cuda

SUCCESS, INVALID_VALUE, NOT_INITIALIZED = 0, 1, 3
INVALID_CONTEXT, FILE_NOT_FOUND, INVALID_HANDLE = 201, 301, 400


@pytest.fixture(scope="module")
def seen(cuda_lib, tmp_path_factory):
    return run_cuda(cuda_lib, node("h100", tmp_path_factory.mktemp("link")), "link")


def test_a_link_needs_init_and_a_current_context(seen):
    assert (seen["before_init"], seen["no_context"]) == (NOT_INITIALIZED, INVALID_CONTEXT)


def test_inputs_are_accepted_and_a_missing_file_is_not_found(seen):
    assert (seen["add_data"], seen["add_file"]) == (SUCCESS, SUCCESS)
    assert seen["add_nothing"] == INVALID_VALUE
    assert seen["add_missing_file"] == FILE_NOT_FOUND


def test_completion_gives_an_image_that_loads_and_whose_kernel_launches(seen):
    assert seen["cubin"] == [True, 64, True]                  # non-NULL, 64 bytes, an ELF's magic
    assert seen["launch"] == SUCCESS
    assert seen["destroy"] == SUCCESS


def test_a_destroyed_or_null_state_is_an_invalid_handle(seen):
    assert seen["destroyed"] == [INVALID_HANDLE, INVALID_HANDLE, INVALID_HANDLE]   # add, complete, destroy
    assert seen["null_state"] == INVALID_HANDLE
    assert seen["raw_destroy"] == [SUCCESS, INVALID_HANDLE]


def test_null_out_pointers_and_option_arrays_are_invalid_values(seen):
    assert seen["null_out"] == [INVALID_VALUE, INVALID_VALUE]   # no stateOut; 2 options, no arrays
    assert seen["raw_null_cubin"] == INVALID_VALUE


def test_the_log_options_read_back_empty_and_the_link_took_no_time(seen):
    assert seen["logs"] == [0, 0, ord("x")]                   # NUL-terminated at once, nothing after
    assert (seen["raw_create"], seen["raw_add"], seen["raw_complete"]) == (SUCCESS, SUCCESS, SUCCESS)
    assert seen["raw_outputs"] == [0, 0, 0.0, "\0x", "\0x"]   # 0 bytes of each log, 0 ms


def test_a_librarys_kernel_and_module_are_found(seen):
    assert (seen["library_kernel"], seen["library_module"], seen["library_unload"]) == (SUCCESS, SUCCESS, SUCCESS)
    assert seen["release"] == SUCCESS
