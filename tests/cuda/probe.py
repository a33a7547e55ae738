"""Drive the mock CUDA driver through NVIDIA's cuda-bindings, and NVML through pynvml,
in one process; print what they saw as JSON.

    probe.py devices            cuInit, every device's name, UUID, PCI id, memory and
                                attribute 1-134, and NVML's view of the same GPUs
    probe.py hold DEV BYTES     hold BYTES on device DEV (its primary context; DEV,DEV,...
                                on each of them), print a line of JSON (free: the last
                                one's), wait for a line on stdin, release, exit
    probe.py meminfo DEV        cuMemGetInfo on device DEV, and NVML's processes and memory
    probe.py nvml               NVML's compute processes and memory used of every GPU
    probe.py memory             the memory, stream, event, module and launch calls, each
                                result as the CUresult it returned
    probe.py link               the JIT linker calls (cuLink*) and libraries, each result
                                as the CUresult it returned
    probe.py fork               cuInit, then a forked child's cuInit and cuDeviceGetCount

Errors are printed as CUresult numbers, never raised: the test compares them.
"""

from __future__ import annotations

import json
import os
import sys

from cuda.bindings import driver as cu

A = cu.CUdevice_attribute


def code(result) -> int:
    return int(result[0] if isinstance(result, tuple) else result)


def value(result):
    err = code(result)
    if err != 0:
        raise SystemExit(f"probe: CUresult {err} from {result!r}")
    return result[1] if len(result) == 2 else result[1:]


def text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode()


def nvml_view() -> list:
    import pynvml
    pynvml.nvmlInit()
    out = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        pci = pynvml.nvmlDeviceGetPciInfo(h)
        out.append({
            "name": pynvml.nvmlDeviceGetName(h), "uuid": pynvml.nvmlDeviceGetUUID(h),
            "pci": [pci.domain, pci.bus, pci.device], "total": mem.total, "reserved": mem.reserved,
            "used": mem.used, "free": mem.free,
            "processes": [[p.pid, p.usedGpuMemory] for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)],
        })
    return out


def devices() -> dict:
    init = code(cu.cuInit(0))
    out = {"init": init, "version": value(cu.cuDriverGetVersion())}
    if init != 0:
        out["count_error"] = code(cu.cuDeviceGetCount())
        return out
    count = value(cu.cuDeviceGetCount())
    out["count"] = count
    out["devices"] = []
    for i in range(count):
        dev = value(cu.cuDeviceGet(i))
        out["devices"].append({
            "name": text(value(cu.cuDeviceGetName(256, dev))),
            "uuid": bytes(value(cu.cuDeviceGetUuid(dev)).bytes).hex(),
            "uuid_v2": bytes(value(cu.cuDeviceGetUuid_v2(dev)).bytes).hex(),
            "pci": text(value(cu.cuDeviceGetPCIBusId(32, dev))),
            "total": value(cu.cuDeviceTotalMem(dev)),
            "attrs": {n: value(cu.cuDeviceGetAttribute(A(n), dev)) for n in range(1, 135)},
        })
    out["bad_ordinal"] = code(cu.cuDeviceGet(count))
    out["by_pci"] = [int(value(cu.cuDeviceGetByPCIBusId(d["pci"].encode()))) for d in out["devices"]]
    out["nvml"] = nvml_view()
    return out


def context(dev_index: int):
    dev = value(cu.cuDeviceGet(dev_index))
    ctx = value(cu.cuDevicePrimaryCtxRetain(dev))
    value(cu.cuCtxSetCurrent(ctx))
    return dev, ctx


def hold(dev_indices: list[int], size: int) -> None:
    value(cu.cuInit(0))
    held = []
    for dev_index in dev_indices:
        context(dev_index)
        held.append(int(value(cu.cuMemAlloc(size))))
    print(json.dumps({"pid": os.getpid(), "free": value(cu.cuMemGetInfo())[0]}), flush=True)
    sys.stdin.readline()
    for ptr in held:
        value(cu.cuMemFree(ptr))


def meminfo(dev_index: int) -> dict:
    value(cu.cuInit(0))
    context(dev_index)
    free, total = value(cu.cuMemGetInfo())
    return {"pid": os.getpid(), "free": free, "total": total, "nvml": nvml_view()}


def memory() -> dict:
    """Every memory, stream, event, module and launch call the driver offers, one result each."""
    import numpy as np
    r = {"before_init": code(cu.cuMemAlloc(1 << 20))}
    value(cu.cuInit(0))
    r["no_context"] = code(cu.cuMemAlloc(1 << 20))
    dev, ctx = context(0)
    free0, total = value(cu.cuMemGetInfo())
    r["total"] = total
    # Lazily reserved: 40 GiB cost no resident memory until touched.
    rss0 = _rss()
    big = int(value(cu.cuMemAlloc(40 << 30)))
    r["big_free_drop"] = free0 - value(cu.cuMemGetInfo())[0]
    value(cu.cuMemsetD8(big, 7, 4096))
    r["big_rss_growth"] = _rss() - rss0
    r["big_range"] = [int(x) for x in value(cu.cuMemGetAddressRange(big + 5))]
    r["big_range"][0] -= big
    value(cu.cuMemFree(big))
    r["free_after_free"] = value(cu.cuMemGetInfo())[0] - free0
    r["double_free"] = code(cu.cuMemFree(big))
    r["too_big"] = code(cu.cuMemAlloc(total + (1 << 30)))
    r["zero_size"] = code(cu.cuMemAlloc(0))
    # Copies: host to device, device to device, device to host, and out of bounds.
    n = 1 << 20
    src = np.arange(n, dtype=np.uint32)
    a = int(value(cu.cuMemAlloc(src.nbytes)))
    b = int(value(cu.cuMemAlloc(src.nbytes)))
    value(cu.cuMemcpyHtoD(a, src.ctypes.data, src.nbytes))
    value(cu.cuMemcpyDtoD(b, a, src.nbytes))
    back = np.zeros_like(src)
    value(cu.cuMemcpyDtoH(back.ctypes.data, b, src.nbytes))
    r["round_trip"] = bool((back == src).all())
    r["copy_past_end"] = code(cu.cuMemcpyHtoD(a + 8, src.ctypes.data, src.nbytes))
    r["copy_from_nowhere"] = code(cu.cuMemcpyDtoH(back.ctypes.data, 0x1000, 16))
    # Fills.
    value(cu.cuMemsetD32(a, 0xDEADBEEF, n))
    value(cu.cuMemcpyDtoH(back.ctypes.data, a, src.nbytes))
    r["memset32"] = bool((back == 0xDEADBEEF).all())
    value(cu.cuMemsetD16(a, 0x1234, 2 * n))
    value(cu.cuMemcpyDtoH(back.ctypes.data, a, src.nbytes))
    r["memset16"] = bool((back.view(np.uint16) == 0x1234).all())
    r["memset32_misaligned"] = code(cu.cuMemsetD32(a + 1, 0, 4))
    # 2D: a 4 x 16-byte window of a pitched allocation.
    pitched, pitch = (int(x) for x in value(cu.cuMemAllocPitch(100, 4, 4)))
    value(cu.cuMemsetD2D8(pitched, pitch, 0, 100, 4))
    host = np.arange(64, dtype=np.uint8)
    copy = cu.CUDA_MEMCPY2D()
    copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_HOST
    copy.srcHost = host.ctypes.data
    copy.srcPitch = 16
    copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.dstDevice = pitched
    copy.dstPitch = pitch
    copy.dstXInBytes = 8
    copy.WidthInBytes = 16
    copy.Height = 4
    value(cu.cuMemcpy2D(copy))
    rows = np.zeros(pitch * 4, dtype=np.uint8)
    value(cu.cuMemcpyDtoH(rows.ctypes.data, pitched, rows.nbytes))
    r["pitch"] = int(pitch)
    r["copy2d"] = [rows[i * pitch + 8:i * pitch + 24].tolist() == host[i * 16:(i + 1) * 16].tolist()
                   for i in range(4)] + [int(rows[7]), int(rows[24])]
    # Streams and events: asynchronous forms on a created stream, timed.
    stream = value(cu.cuStreamCreate(0))
    start = value(cu.cuEventCreate(0))
    end = value(cu.cuEventCreate(0))
    value(cu.cuEventRecord(start, stream))
    value(cu.cuMemsetD8Async(a, 3, src.nbytes, stream))
    value(cu.cuMemcpyDtoHAsync(back.ctypes.data, a, src.nbytes, stream))
    value(cu.cuEventRecord(end, stream))
    r["stream_query"] = code(cu.cuStreamQuery(stream))
    r["stream_sync"] = code(cu.cuStreamSynchronize(stream))
    r["async_copy"] = bool((back.view(np.uint8) == 3).all())
    r["elapsed_ms_nonnegative"] = value(cu.cuEventElapsedTime(start, end)) >= 0
    untimed = value(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))
    value(cu.cuEventRecord(untimed, stream))
    r["elapsed_untimed"] = code(cu.cuEventElapsedTime(start, untimed))
    value(cu.cuStreamDestroy(stream))
    r["destroyed_stream"] = code(cu.cuStreamSynchronize(stream))
    # Pinned host memory and pointer attributes.
    pinned = int(value(cu.cuMemAllocHost(4096)))
    r["host_device_pointer_same"] = int(value(cu.cuMemHostGetDevicePointer(pinned, 0))) == int(pinned)
    r["memory_type"] = [int(value(cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                           p))) for p in (a, pinned)]
    r["ordinal"] = int(value(cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a)))
    value(cu.cuMemFreeHost(pinned))
    managed = int(value(cu.cuMemAllocManaged(4096, cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL)))
    r["is_managed"] = int(value(cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                                         managed)))
    value(cu.cuMemFree(managed))
    # Modules and launches: accepted, nothing executes.
    module = value(cu.cuModuleLoadData(b"\x7fELF not a real cubin"))
    fn = value(cu.cuModuleGetFunction(module, b"vector_add"))
    r["same_function"] = int(value(cu.cuModuleGetFunction(module, b"vector_add"))) == int(fn)
    r["launch"] = code(cu.cuLaunchKernel(fn, 1024, 1, 1, 256, 1, 1, 0, 0, None, 0))
    r["launch_block_too_big"] = code(cu.cuLaunchKernel(fn, 1, 1, 1, 1025, 1, 1, 0, 0, None, 0))
    r["launch_smem_too_big"] = code(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 1 << 20, 0, None, 0))
    r["global"] = code(cu.cuModuleGetGlobal(module, b"counter"))
    value(cu.cuModuleUnload(module))
    r["unloaded_function"] = code(cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, 0, None, 0))
    r["context_device"] = int(value(cu.cuCtxGetDevice()))
    value(cu.cuMemFree(a))
    value(cu.cuMemFree(b))
    value(cu.cuMemFree(pitched))
    r["release"] = code(cu.cuDevicePrimaryCtxRelease(dev))
    r["after_release"] = code(cu.cuMemAlloc(1 << 20))
    r["errors"] = {n: [value(cu.cuGetErrorName(cu.CUresult(n))).decode(),
                       value(cu.cuGetErrorString(cu.CUresult(n))).decode()] for n in (0, 1, 2, 100, 201, 500)}
    return r


PTX = b".version 8.4\n.target sm_90\n.address_size 64\n.visible .entry vector_add()\n{\n\tret;\n}\n\0"


def link() -> dict:
    """The linker as numba-cuda (through cuda.core) drives it, its argument checks, and a library's kernel."""
    import ctypes
    import tempfile
    J, I = cu.CUjit_option, cu.CUjitInputType
    r = {"before_init": code(cu.cuLinkCreate(0, None, None))}
    value(cu.cuInit(0))
    r["no_context"] = code(cu.cuLinkCreate(0, None, None))
    dev, ctx = context(0)
    info, error = bytearray(b"x" * 64), bytearray(b"x" * 64)
    state = value(cu.cuLinkCreate(4, [J.CU_JIT_INFO_LOG_BUFFER, J.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                      J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES],
                                  [info, 64, error, 64]))
    r["logs"] = [info[0], error[0], info[1]]
    r["add_data"] = code(cu.cuLinkAddData(state, I.CU_JIT_INPUT_PTX, PTX, len(PTX), b"a.ptx", 0, None, None))
    r["add_nothing"] = code(cu.cuLinkAddData(state, I.CU_JIT_INPUT_PTX, None, 0, b"b.ptx", 0, None, None))
    with tempfile.NamedTemporaryFile(suffix=".ptx") as f:
        f.write(PTX)
        f.flush()
        r["add_file"] = code(cu.cuLinkAddFile(state, I.CU_JIT_INPUT_PTX, f.name.encode(), 0, None, None))
    r["add_missing_file"] = code(cu.cuLinkAddFile(state, I.CU_JIT_INPUT_PTX, b"/nonexistent/c.ptx", 0, None, None))
    cubin, size = value(cu.cuLinkComplete(state))
    r["cubin"] = [int(cubin) != 0, int(size), ctypes.string_at(int(cubin), 4) == b"\x7fELF"]
    module = value(cu.cuModuleLoadData(int(cubin)))
    fn = value(cu.cuModuleGetFunction(module, b"vector_add"))
    r["launch"] = code(cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, 0, None, 0))
    value(cu.cuModuleUnload(module))
    r["destroy"] = code(cu.cuLinkDestroy(state))
    r["destroyed"] = [code(cu.cuLinkAddData(state, I.CU_JIT_INPUT_PTX, PTX, len(PTX), b"a.ptx", 0, None, None)),
                      code(cu.cuLinkComplete(state)), code(cu.cuLinkDestroy(state))]
    r["null_state"] = code(cu.cuLinkComplete(cu.CUlinkState(0)))
    # NULL out-pointers and arrays, and the size and time options written back, at the C level.
    lib = ctypes.CDLL("libcuda.so.1")
    raw = ctypes.c_void_p()
    r["null_out"] = [lib.cuLinkCreate_v2(0, None, None, None),
                     lib.cuLinkCreate_v2(2, None, None, ctypes.byref(raw))]
    ilog, elog, took = ctypes.create_string_buffer(b"x" * 15), ctypes.create_string_buffer(b"x" * 15), ctypes.c_float(7.5)
    options = (ctypes.c_int * 5)(3, 4, 5, 6, 2)     # INFO_LOG_BUFFER, its size, ERROR_LOG_BUFFER, its size, WALL_TIME
    values = (ctypes.c_void_p * 5)(ctypes.addressof(ilog), 16, ctypes.addressof(elog), 16, ctypes.addressof(took))
    r["raw_create"] = lib.cuLinkCreate_v2(5, options, values, ctypes.byref(raw))
    r["raw_add"] = lib.cuLinkAddData_v2(raw, 1, PTX, len(PTX), None, 0, None, None)   # CU_JIT_INPUT_PTX
    out, out_size = ctypes.c_void_p(), ctypes.c_size_t()
    r["raw_null_cubin"] = lib.cuLinkComplete(raw, None, ctypes.byref(out_size))
    r["raw_complete"] = lib.cuLinkComplete(raw, ctypes.byref(out), ctypes.byref(out_size))
    r["raw_outputs"] = [values[1] or 0, values[3] or 0, took.value, ilog.raw[:2].decode(), elog.raw[:2].decode()]
    r["raw_destroy"] = [lib.cuLinkDestroy(raw), lib.cuLinkDestroy(raw)]
    # A library and its module are two handles: its kernel is found.
    library = value(cu.cuLibraryLoadData(b"\x7fELF not a real cubin", None, None, 0, None, None, 0))
    r["library_kernel"] = code(cu.cuLibraryGetKernel(library, b"vector_add"))
    r["library_module"] = code(cu.cuLibraryGetModule(library))
    r["library_unload"] = code(cu.cuLibraryUnload(library))
    r["release"] = code(cu.cuDevicePrimaryCtxRelease(dev))
    return r


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def fork() -> dict:
    value(cu.cuInit(0))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        seen = json.dumps([code(cu.cuInit(0)), code(cu.cuDeviceGetCount())]).encode()
        os.write(write, seen)
        os._exit(0)
    os.close(write)
    child = json.loads(os.read(read, 4096))
    os.waitpid(pid, 0)
    return {"child": child, "parent": code(cu.cuDeviceGetCount())}


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "hold":
        hold([int(d) for d in args[0].split(",")], int(args[1]))
        return 0
    result = {"devices": devices, "memory": memory, "link": link, "fork": fork, "nvml": lambda: {"nvml": nvml_view()},
              "meminfo": lambda: meminfo(int(args[0]))}[command]()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
