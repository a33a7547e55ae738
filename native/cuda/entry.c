/* cuGetProcAddress: how cudart and cuda-bindings bind the driver.
 *
 * A consumer asks for a base name, the CUDA version whose ABI it was built
 * for, and whether it wants the per-thread default stream forms (facts:
 * cudart 12.4 asks for cuMemAlloc at 3020 to get cuMemAlloc_v2, for
 * cuDevicePrimaryCtxRelease at 7000 to get the first form, for cuMemcpyHtoD at
 * 7000 with flags 2 to get cuMemcpyHtoD_v2_ptds). ENTRIES lists every name
 * this library implements with the version each of its forms appeared in;
 * the answer is the newest form not newer than the version asked for. A name
 * it lists only in newer forms is VERSION_NOT_SUFFICIENT, any other name
 * SYMBOL_NOT_FOUND, both with a NULL pointer and CUDA_SUCCESS, as cuda.h
 * documents. The private export tables cudart asks for are not offered
 * (cuGetExportTable: NOT_FOUND), which is why NVIDIA's runtime cannot run
 * over this driver (the README says so).
 */
#define _GNU_SOURCE
#include <string.h>

#include "cu.h"

struct entry {
    const char *name;
    int version;                       /* the CUDA version this form appeared in */
    int per_thread;                    /* the _ptds / _ptsz form */
    void *fn;
};

#define L(name, version, fn) {#name, version, 0, (void *)fn}
#define T(name, version, fn) {#name, version, 1, (void *)fn}

static const struct entry ENTRIES[] = {
    /* init, versions, entry points, errors */
    L(cuInit, 2000, cuInit),
    L(cuDriverGetVersion, 2020, cuDriverGetVersion),
    L(cuGetProcAddress, 11030, cuGetProcAddress),
    L(cuGetProcAddress, 12000, cuGetProcAddress_v2),
    L(cuGetExportTable, 3000, cuGetExportTable),
    L(cuGetErrorString, 6000, cuGetErrorString),
    L(cuGetErrorName, 6000, cuGetErrorName),
    /* devices */
    L(cuDeviceGet, 2000, cuDeviceGet),
    L(cuDeviceGetCount, 2000, cuDeviceGetCount),
    L(cuDeviceGetName, 2000, cuDeviceGetName),
    L(cuDeviceGetUuid, 9020, cuDeviceGetUuid),
    L(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2),
    L(cuDeviceTotalMem, 2000, cuDeviceTotalMem),
    L(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
    L(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
    L(cuDeviceComputeCapability, 2000, cuDeviceComputeCapability),
    L(cuDeviceGetProperties, 2000, cuDeviceGetProperties),
    L(cuDeviceGetPCIBusId, 4010, cuDeviceGetPCIBusId),
    L(cuDeviceGetByPCIBusId, 4010, cuDeviceGetByPCIBusId),
    L(cuDeviceCanAccessPeer, 4000, cuDeviceCanAccessPeer),
    L(cuDeviceGetP2PAttribute, 8000, cuDeviceGetP2PAttribute),
    L(cuDeviceGetExecAffinitySupport, 11040, cuDeviceGetExecAffinitySupport),
    /* primary contexts */
    L(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    L(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease),
    L(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    L(cuDevicePrimaryCtxSetFlags, 7000, cuDevicePrimaryCtxSetFlags),
    L(cuDevicePrimaryCtxSetFlags, 11000, cuDevicePrimaryCtxSetFlags_v2),
    L(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState),
    L(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset),
    L(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2),
    /* contexts */
    L(cuCtxCreate, 2000, cuCtxCreate),
    L(cuCtxCreate, 3020, cuCtxCreate_v2),
    L(cuCtxCreate, 11040, cuCtxCreate_v3),
    L(cuCtxDestroy, 2000, cuCtxDestroy),
    L(cuCtxDestroy, 4000, cuCtxDestroy_v2),
    L(cuCtxPushCurrent, 2000, cuCtxPushCurrent),
    L(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
    L(cuCtxPopCurrent, 2000, cuCtxPopCurrent),
    L(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2),
    L(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    L(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
    L(cuCtxGetDevice, 2000, cuCtxGetDevice),
    L(cuCtxGetFlags, 7000, cuCtxGetFlags),
    L(cuCtxSetFlags, 12010, cuCtxSetFlags),
    L(cuCtxGetId, 12000, cuCtxGetId),
    L(cuCtxGetApiVersion, 3020, cuCtxGetApiVersion),
    L(cuCtxSynchronize, 2000, cuCtxSynchronize),
    L(cuCtxGetLimit, 3010, cuCtxGetLimit),
    L(cuCtxSetLimit, 3010, cuCtxSetLimit),
    L(cuCtxGetCacheConfig, 3020, cuCtxGetCacheConfig),
    L(cuCtxSetCacheConfig, 3020, cuCtxSetCacheConfig),
    L(cuCtxGetSharedMemConfig, 4020, cuCtxGetSharedMemConfig),
    L(cuCtxSetSharedMemConfig, 4020, cuCtxSetSharedMemConfig),
    L(cuCtxGetStreamPriorityRange, 5050, cuCtxGetStreamPriorityRange),
    L(cuCtxResetPersistingL2Cache, 11000, cuCtxResetPersistingL2Cache),
    L(cuCtxEnablePeerAccess, 4000, cuCtxEnablePeerAccess),
    L(cuCtxDisablePeerAccess, 4000, cuCtxDisablePeerAccess),
    /* memory */
    L(cuMemGetInfo, 2000, cuMemGetInfo),
    L(cuMemGetInfo, 3020, cuMemGetInfo_v2),
    L(cuMemAlloc, 3020, cuMemAlloc_v2),
    L(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
    L(cuMemFree, 3020, cuMemFree_v2),
    L(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2),
    L(cuMemAllocManaged, 6000, cuMemAllocManaged),
    L(cuMemAllocHost, 3020, cuMemAllocHost_v2),
    L(cuMemFreeHost, 2000, cuMemFreeHost),
    L(cuMemHostAlloc, 2020, cuMemHostAlloc),
    L(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2),
    L(cuMemHostGetFlags, 2030, cuMemHostGetFlags),
    L(cuMemHostRegister, 4000, cuMemHostRegister),
    L(cuMemHostRegister, 6050, cuMemHostRegister_v2),
    L(cuMemHostUnregister, 4000, cuMemHostUnregister),
    L(cuPointerGetAttribute, 4000, cuPointerGetAttribute),
    L(cuPointerGetAttributes, 7000, cuPointerGetAttributes),
    L(cuMemAllocAsync, 11020, cuMemAllocAsync),
    T(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz),
    L(cuMemFreeAsync, 11020, cuMemFreeAsync),
    T(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz),
    /* copies and fills */
    L(cuMemcpy, 4000, cuMemcpy),
    T(cuMemcpy, 7000, cuMemcpy_ptds),
    L(cuMemcpyAsync, 4000, cuMemcpyAsync),
    T(cuMemcpyAsync, 7000, cuMemcpyAsync_ptsz),
    L(cuMemcpyPeer, 4000, cuMemcpyPeer),
    T(cuMemcpyPeer, 7000, cuMemcpyPeer_ptds),
    L(cuMemcpyPeerAsync, 4000, cuMemcpyPeerAsync),
    T(cuMemcpyPeerAsync, 7000, cuMemcpyPeerAsync_ptsz),
    L(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2),
    T(cuMemcpyHtoD, 7000, cuMemcpyHtoD_v2_ptds),
    L(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2),
    T(cuMemcpyDtoH, 7000, cuMemcpyDtoH_v2_ptds),
    L(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2),
    T(cuMemcpyDtoD, 7000, cuMemcpyDtoD_v2_ptds),
    L(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2),
    T(cuMemcpyHtoDAsync, 7000, cuMemcpyHtoDAsync_v2_ptsz),
    L(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2),
    T(cuMemcpyDtoHAsync, 7000, cuMemcpyDtoHAsync_v2_ptsz),
    L(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2),
    T(cuMemcpyDtoDAsync, 7000, cuMemcpyDtoDAsync_v2_ptsz),
    L(cuMemcpy2D, 3020, cuMemcpy2D_v2),
    T(cuMemcpy2D, 7000, cuMemcpy2D_v2_ptds),
    L(cuMemcpy2DUnaligned, 3020, cuMemcpy2DUnaligned_v2),
    T(cuMemcpy2DUnaligned, 7000, cuMemcpy2DUnaligned_v2_ptds),
    L(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2),
    T(cuMemcpy2DAsync, 7000, cuMemcpy2DAsync_v2_ptsz),
    L(cuMemsetD8, 3020, cuMemsetD8_v2),
    T(cuMemsetD8, 7000, cuMemsetD8_v2_ptds),
    L(cuMemsetD16, 3020, cuMemsetD16_v2),
    T(cuMemsetD16, 7000, cuMemsetD16_v2_ptds),
    L(cuMemsetD32, 3020, cuMemsetD32_v2),
    T(cuMemsetD32, 7000, cuMemsetD32_v2_ptds),
    L(cuMemsetD2D8, 3020, cuMemsetD2D8_v2),
    T(cuMemsetD2D8, 7000, cuMemsetD2D8_v2_ptds),
    L(cuMemsetD2D16, 3020, cuMemsetD2D16_v2),
    T(cuMemsetD2D16, 7000, cuMemsetD2D16_v2_ptds),
    L(cuMemsetD2D32, 3020, cuMemsetD2D32_v2),
    T(cuMemsetD2D32, 7000, cuMemsetD2D32_v2_ptds),
    L(cuMemsetD8Async, 3020, cuMemsetD8Async),
    T(cuMemsetD8Async, 7000, cuMemsetD8Async_ptsz),
    L(cuMemsetD16Async, 3020, cuMemsetD16Async),
    T(cuMemsetD16Async, 7000, cuMemsetD16Async_ptsz),
    L(cuMemsetD32Async, 3020, cuMemsetD32Async),
    T(cuMemsetD32Async, 7000, cuMemsetD32Async_ptsz),
    L(cuMemsetD2D8Async, 3020, cuMemsetD2D8Async),
    T(cuMemsetD2D8Async, 7000, cuMemsetD2D8Async_ptsz),
    L(cuMemsetD2D16Async, 3020, cuMemsetD2D16Async),
    T(cuMemsetD2D16Async, 7000, cuMemsetD2D16Async_ptsz),
    L(cuMemsetD2D32Async, 3020, cuMemsetD2D32Async),
    T(cuMemsetD2D32Async, 7000, cuMemsetD2D32Async_ptsz),
    /* streams and events */
    L(cuStreamCreate, 2000, cuStreamCreate),
    L(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority),
    L(cuStreamDestroy, 2000, cuStreamDestroy),
    L(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    L(cuStreamSynchronize, 2000, cuStreamSynchronize),
    T(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz),
    L(cuStreamQuery, 2000, cuStreamQuery),
    T(cuStreamQuery, 7000, cuStreamQuery_ptsz),
    L(cuStreamWaitEvent, 3020, cuStreamWaitEvent),
    T(cuStreamWaitEvent, 7000, cuStreamWaitEvent_ptsz),
    L(cuStreamGetFlags, 5050, cuStreamGetFlags),
    T(cuStreamGetFlags, 7000, cuStreamGetFlags_ptsz),
    L(cuStreamGetPriority, 5050, cuStreamGetPriority),
    T(cuStreamGetPriority, 7000, cuStreamGetPriority_ptsz),
    L(cuStreamGetCtx, 9020, cuStreamGetCtx),
    T(cuStreamGetCtx, 9020, cuStreamGetCtx_ptsz),
    L(cuStreamGetId, 12000, cuStreamGetId),
    T(cuStreamGetId, 12000, cuStreamGetId_ptsz),
    L(cuStreamAddCallback, 5000, cuStreamAddCallback),
    T(cuStreamAddCallback, 7000, cuStreamAddCallback_ptsz),
    L(cuStreamAttachMemAsync, 6000, cuStreamAttachMemAsync),
    T(cuStreamAttachMemAsync, 7000, cuStreamAttachMemAsync_ptsz),
    L(cuLaunchHostFunc, 10000, cuLaunchHostFunc),
    T(cuLaunchHostFunc, 10000, cuLaunchHostFunc_ptsz),
    L(cuEventCreate, 2000, cuEventCreate),
    L(cuEventRecord, 2000, cuEventRecord),
    T(cuEventRecord, 7000, cuEventRecord_ptsz),
    L(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags),
    T(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags_ptsz),
    L(cuEventQuery, 2000, cuEventQuery),
    L(cuEventSynchronize, 2000, cuEventSynchronize),
    L(cuEventDestroy, 2000, cuEventDestroy),
    L(cuEventDestroy, 4000, cuEventDestroy_v2),
    L(cuEventElapsedTime, 2000, cuEventElapsedTime),
    /* modules, the linker, libraries, functions, launches */
    L(cuModuleLoad, 2000, cuModuleLoad),
    L(cuModuleLoadData, 2000, cuModuleLoadData),
    L(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx),
    L(cuModuleLoadFatBinary, 2000, cuModuleLoadFatBinary),
    L(cuModuleUnload, 2000, cuModuleUnload),
    L(cuModuleGetFunction, 2000, cuModuleGetFunction),
    L(cuModuleGetGlobal, 3020, cuModuleGetGlobal_v2),
    L(cuModuleGetLoadingMode, 11070, cuModuleGetLoadingMode),
    L(cuLinkCreate, 5050, cuLinkCreate),
    L(cuLinkCreate, 6050, cuLinkCreate_v2),
    L(cuLinkAddData, 5050, cuLinkAddData),
    L(cuLinkAddData, 6050, cuLinkAddData_v2),
    L(cuLinkAddFile, 5050, cuLinkAddFile),
    L(cuLinkAddFile, 6050, cuLinkAddFile_v2),
    L(cuLinkComplete, 5050, cuLinkComplete),
    L(cuLinkDestroy, 5050, cuLinkDestroy),
    L(cuLibraryLoadData, 12000, cuLibraryLoadData),
    L(cuLibraryLoadFromFile, 12000, cuLibraryLoadFromFile),
    L(cuLibraryUnload, 12000, cuLibraryUnload),
    L(cuLibraryGetKernel, 12000, cuLibraryGetKernel),
    L(cuLibraryGetModule, 12000, cuLibraryGetModule),
    L(cuLibraryGetGlobal, 12000, cuLibraryGetGlobal),
    L(cuKernelGetFunction, 12000, cuKernelGetFunction),
    L(cuKernelGetAttribute, 12000, cuKernelGetAttribute),
    L(cuKernelSetAttribute, 12000, cuKernelSetAttribute),
    L(cuKernelSetCacheConfig, 12000, cuKernelSetCacheConfig),
    L(cuKernelGetName, 12030, cuKernelGetName),
    L(cuFuncGetAttribute, 2020, cuFuncGetAttribute),
    L(cuFuncSetAttribute, 9000, cuFuncSetAttribute),
    L(cuFuncSetCacheConfig, 3000, cuFuncSetCacheConfig),
    L(cuFuncSetSharedMemConfig, 4020, cuFuncSetSharedMemConfig),
    L(cuFuncGetName, 12030, cuFuncGetName),
    L(cuFuncGetModule, 11000, cuFuncGetModule),
    L(cuLaunchKernel, 4000, cuLaunchKernel),
    T(cuLaunchKernel, 7000, cuLaunchKernel_ptsz),
    L(cuLaunchKernelEx, 11060, cuLaunchKernelEx),
    T(cuLaunchKernelEx, 11060, cuLaunchKernelEx_ptsz),
    L(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel),
    T(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel_ptsz),
    L(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, cuOccupancyMaxActiveBlocksPerMultiprocessor),
    L(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000,
      cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
    L(cuOccupancyMaxPotentialBlockSize, 6050, cuOccupancyMaxPotentialBlockSize),
    L(cuOccupancyMaxPotentialBlockSizeWithFlags, 7000, cuOccupancyMaxPotentialBlockSizeWithFlags),
    L(cuOccupancyAvailableDynamicSMemPerBlock, 10020, cuOccupancyAvailableDynamicSMemPerBlock),
};
#undef L
#undef T

/* The form of `symbol` for `version` (per-thread forms first when asked for). */
static void *lookup(const char *symbol, int version, int per_thread, CUdriverProcAddressQueryResult *status)
{
    const struct entry *best = NULL;
    int known = 0;
    for (int pass = per_thread ? 1 : 0; pass >= 0 && !best; pass--) {
        for (size_t i = 0; i < sizeof ENTRIES / sizeof ENTRIES[0]; i++) {
            const struct entry *e = &ENTRIES[i];
            if (e->per_thread != pass || strcmp(e->name, symbol) != 0)
                continue;
            known = 1;
            if (e->version <= version && (!best || e->version > best->version))
                best = e;
        }
    }
    *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                   : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return best ? best->fn : NULL;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!symbol || !pfn ||
        flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    CUdriverProcAddressQueryResult status;
    *pfn = lookup(symbol, cudaVersion, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, &status);
    if (symbolStatus)
        *symbolStatus = status;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    if (!ppExportTable || !pExportTableId)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    return CUDA_ERROR_NOT_FOUND;
}
