"""cuGetProcAddress as cudart 12.4 and cuda-bindings use it: every name at the version
cudart asks for gives the ABI form that version means (facts §1), per-thread stream
forms with flags 2, SYMBOL_NOT_FOUND for a name the driver lacks and VERSION_NOT_SUFFICIENT
for one asked at a version older than its forms; the export tables are not offered."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cuda.conftest import cuda_env, node

#: (name, version, flags, the exported function it must resolve to), from the
#: requests cudart 12.4 makes (shared/docs/cudart-12.4-getprocaddress-order.txt).
RESOLVES = [
    ("cuInit", 2000, 0, "cuInit"),
    ("cuGetProcAddress", 11030, 0, "cuGetProcAddress"),
    ("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"),
    ("cuDeviceGet", 2000, 0, "cuDeviceGet"),
    ("cuDeviceTotalMem", 3020, 0, "cuDeviceTotalMem_v2"),
    ("cuDeviceGetUuid", 9020, 0, "cuDeviceGetUuid"),
    ("cuDeviceGetUuid", 11040, 0, "cuDeviceGetUuid_v2"),
    ("cuDriverGetVersion", 2020, 0, "cuDriverGetVersion"),
    ("cuDevicePrimaryCtxRetain", 7000, 0, "cuDevicePrimaryCtxRetain"),
    ("cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease"),
    ("cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2"),
    ("cuDevicePrimaryCtxSetFlags", 11000, 0, "cuDevicePrimaryCtxSetFlags_v2"),
    ("cuDevicePrimaryCtxReset", 7000, 0, "cuDevicePrimaryCtxReset"),
    ("cuCtxCreate", 3020, 0, "cuCtxCreate_v2"),
    ("cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent"),
    ("cuCtxPopCurrent", 4000, 0, "cuCtxPopCurrent_v2"),
    ("cuModuleGetLoadingMode", 11070, 0, "cuModuleGetLoadingMode"),
    ("cuLibraryLoadData", 12000, 0, "cuLibraryLoadData"),
    ("cuLinkCreate", 5050, 0, "cuLinkCreate"),
    ("cuLinkCreate", 6050, 0, "cuLinkCreate_v2"),
    ("cuLinkAddData", 6050, 0, "cuLinkAddData_v2"),
    ("cuLinkAddFile", 6050, 0, "cuLinkAddFile_v2"),
    ("cuLinkComplete", 5050, 0, "cuLinkComplete"),
    ("cuLinkDestroy", 5050, 0, "cuLinkDestroy"),
    ("cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2"),
    ("cuMemAlloc", 3020, 0, "cuMemAlloc_v2"),
    ("cuMemFree", 3020, 0, "cuMemFree_v2"),
    ("cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2"),
    ("cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz"),
    ("cuMemcpy", 4000, 0, "cuMemcpy"),
    ("cuMemcpy", 7000, 2, "cuMemcpy_ptds"),
    ("cuMemcpyHtoD", 3020, 0, "cuMemcpyHtoD_v2"),
    ("cuMemcpyHtoD", 7000, 2, "cuMemcpyHtoD_v2_ptds"),
    ("cuMemcpyDtoHAsync", 3020, 0, "cuMemcpyDtoHAsync_v2"),
    ("cuMemcpyDtoHAsync", 7000, 2, "cuMemcpyDtoHAsync_v2_ptsz"),
    ("cuMemsetD8", 7000, 2, "cuMemsetD8_v2_ptds"),
    ("cuLaunchKernel", 4000, 0, "cuLaunchKernel"),
    ("cuLaunchKernel", 7000, 2, "cuLaunchKernel_ptsz"),
    ("cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx"),
    ("cuEventRecord", 7000, 2, "cuEventRecord_ptsz"),
    ("cuEventDestroy", 4000, 0, "cuEventDestroy_v2"),
    ("cuStreamGetCtx", 9020, 0, "cuStreamGetCtx"),
    ("cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2"),
    ("cuGetExportTable", 3000, 0, "cuGetExportTable"),
    ("cuGetErrorString", 6000, 0, "cuGetErrorString"),
    ("cuMemcpyHtoD", 12040, 0, "cuMemcpyHtoD_v2"),                 # asked newer: the newest form
    ("cuDeviceGetUuid", 12090, 0, "cuDeviceGetUuid_v2"),
    ("cuMemAlloc", 12040, 1, "cuMemAlloc_v2"),                    # LEGACY_STREAM: the plain forms
    ("cuStreamCreate", 7000, 2, "cuStreamCreate"),                # no per-thread form: the plain one
]

SUCCESS, SYMBOL_NOT_FOUND, VERSION_NOT_SUFFICIENT = 0, 1, 2

#: (name, version, flags, status) of requests that find nothing.
MISSES = [
    ("", 0, 0, SYMBOL_NOT_FOUND),                                 # cudart's first request, a probe
    ("cuGraphCreate", 10000, 0, SYMBOL_NOT_FOUND),
    ("cuGLInit", 2000, 0, SYMBOL_NOT_FOUND),
    ("cuMemAlloc_v2", 3020, 0, SYMBOL_NOT_FOUND),                 # a base name is asked, never a form
    ("cuMemAlloc", 2000, 0, VERSION_NOT_SUFFICIENT),              # the 32-bit form is not offered
    ("cuLibraryLoadData", 11080, 0, VERSION_NOT_SUFFICIENT),
    ("cuLinkCreate", 5000, 0, VERSION_NOT_SUFFICIENT),
]

SCRIPT = r"""
import ctypes, json, sys
lib = ctypes.CDLL("libcuda.so.1")
get = lib.cuGetProcAddress_v2
get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64,
                ctypes.POINTER(ctypes.c_int)]
out = []
for name, version, flags, expected in json.loads(sys.argv[1]):
    pfn, status = ctypes.c_void_p(), ctypes.c_int(-1)
    err = get(name.encode(), ctypes.byref(pfn), version, flags, ctypes.byref(status))
    want = ctypes.cast(getattr(lib, expected), ctypes.c_void_p).value if expected else None
    out.append([err, status.value, pfn.value == want if expected else pfn.value])
bad = ctypes.c_void_p()
out.append(get(b"cuInit", ctypes.byref(bad), 2000, 4, None))      # an unknown flag
table = ctypes.c_void_p(1)
out.append([lib.cuGetExportTable(ctypes.byref(table), b"\x6b\xd5\xfb\x6c" + bytes(12)), table.value])
print(json.dumps(out))
"""


def resolve(lib_dir, env, rows):
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(rows)], env=cuda_env(lib_dir, env),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def answers(cuda_lib, tmp_path_factory):
    rows = [list(r) for r in RESOLVES] + [[n, v, f, None] for n, v, f, _ in MISSES]
    return resolve(cuda_lib, node("t4", tmp_path_factory.mktemp("entries")), rows)


@pytest.mark.parametrize("row", range(len(RESOLVES)), ids=[f"{r[0]}@{r[1]}/{r[2]}" for r in RESOLVES])
def test_each_name_resolves_to_the_form_its_version_means(answers, row):
    assert answers[row] == [SUCCESS, SUCCESS, True]


@pytest.mark.parametrize("row", range(len(MISSES)), ids=[f"{m[0] or 'empty'}@{m[1]}" for m in MISSES])
def test_what_the_driver_lacks_is_a_null_pointer_and_a_status(answers, row):
    assert answers[len(RESOLVES) + row] == [SUCCESS, MISSES[row][3], None]


def test_an_unknown_flag_is_invalid_and_no_export_table_is_offered(answers):
    assert answers[-2] == 1                                       # CUDA_ERROR_INVALID_VALUE
    assert answers[-1] == [500, None]                             # CUDA_ERROR_NOT_FOUND, no table
