/* Memory: device, managed and page-locked host allocations, registered host
 * ranges, what NVML says is free, and pointer attributes.
 *
 * Device memory is host memory reserved lazily (an anonymous mapping with
 * MAP_NORESERVE), so an 80 GB device costs no RAM until touched; its device
 * pointer is its host address (unified addressing), which is what makes
 * copies plain memcpy (copy.c). An allocation fails with OUT_OF_MEMORY when
 * NVML's free memory of the device, which counts every process of the node
 * (native/nvml/api/processes.c), cannot hold it. What this process holds on a
 * device is reported to NVML after every change (cu_account).
 *
 * The allocations are one array sorted by address, searched by halves, under cu_lock.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cu.h"

static struct cu_alloc *table;
static size_t count, cap;
static unsigned long long next_id = 1;

/* The index of the last allocation starting at or below p, or -1. */
static ptrdiff_t below(const char *p)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

/* The index of the allocation holding [p, p + n), or -1. */
static ptrdiff_t holding(const void *p, size_t n)
{
    ptrdiff_t i = below(p);
    if (i < 0)
        return -1;
    const struct cu_alloc *a = &table[i];
    size_t off = (size_t)((const char *)p - a->base);
    return off < a->size && n <= a->size - off ? i : -1;
}

static ptrdiff_t exactly(const void *p)
{
    ptrdiff_t i = below(p);
    return i >= 0 && table[i].base == p ? i : -1;
}

static int insert(const struct cu_alloc *a)
{
    if (count == cap) {
        size_t ncap = cap ? cap * 2 : 64;
        struct cu_alloc *bigger = realloc(table, ncap * sizeof *bigger);
        if (!bigger)
            return -1;
        table = bigger;
        cap = ncap;
    }
    size_t at = (size_t)(below(a->base) + 1);
    memmove(&table[at + 1], &table[at], (count - at) * sizeof *table);
    table[at] = *a;
    table[at].id = next_id++;
    count++;
    return 0;
}

static void remove_at(size_t i)
{
    memmove(&table[i], &table[i + 1], (count - i - 1) * sizeof *table);
    count--;
}

int cu_alloc_find(const void *p, size_t n, struct cu_alloc *out)
{
    pthread_mutex_lock(&cu_lock);
    ptrdiff_t i = holding(p, n ? n : 1);
    if (i >= 0)
        *out = table[i];
    pthread_mutex_unlock(&cu_lock);
    return i >= 0;
}

static int on_device(enum cu_mem_kind kind)
{
    return kind == CU_MEM_DEVICE || kind == CU_MEM_MANAGED;
}

/* Unmap allocation i and forget it; the device's count drops. Under cu_lock. */
static void release_at(size_t i)
{
    struct cu_alloc a = table[i];
    remove_at(i);
    if (a.kind != CU_MEM_REGISTERED)
        munmap(a.base, a.size);
    if (on_device(a.kind)) {
        CUresult err;
        struct cu_device *d = cu_device((CUdevice)a.ctx->dev, &err);
        if (d)
            d->used -= a.size < d->used ? a.size : d->used;
    }
}

void cu_alloc_drop_context(struct CUctx_st *ctx)
{
    for (size_t i = count; i-- > 0;)
        if (table[i].ctx == ctx)
            release_at(i);
}

static size_t page_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return n > SIZE_MAX - page ? 0 : (n + page - 1) / page * page;
}

/* --- device and managed memory ------------------------------------------------------------ */

static CUresult device_alloc(CUdeviceptr *dptr, size_t bytesize, enum cu_mem_kind kind, unsigned int flags)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_device *d = cu_device((CUdevice)c->dev, &err);
    size_t size = page_round(bytesize);
    unsigned long long free_bytes;
    if (!cu_nvml_memory(d, &free_bytes))
        free_bytes = d->used < d->total_mem ? d->total_mem - d->used : 0;
    if (size == 0 || size > free_bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct cu_alloc a = {.base = p, .size = size, .kind = kind, .ctx = c, .flags = flags};
    pthread_mutex_lock(&cu_lock);
    int ok = insert(&a) == 0;
    if (ok) {
        d->used += size;
        cu_account(d);
    }
    pthread_mutex_unlock(&cu_lock);
    if (!ok) {
        munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult device_free(CUdeviceptr dptr)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!dptr)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&cu_lock);
    ptrdiff_t i = exactly((void *)(uintptr_t)dptr);
    if (i < 0 || !on_device(table[i].kind)) {
        pthread_mutex_unlock(&cu_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUctx_st *owner = table[i].ctx;
    release_at((size_t)i);
    cu_account(cu_device((CUdevice)owner->dev, &err));
    pthread_mutex_unlock(&cu_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return device_alloc(dptr, bytesize, CU_MEM_DEVICE, 0);
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    return device_free(dptr);
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : cu_ready();
    return device_alloc(dptr, bytesize, CU_MEM_MANAGED, flags);
}

/* Rows of `WidthInBytes` padded to the texture pitch alignment of a 2D copy (512 bytes). */
CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes)
{
    if (!pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : cu_ready();
    size_t pitch = (WidthInBytes + 511) / 512 * 512;
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult err = device_alloc(dptr, pitch * Height, CU_MEM_DEVICE, 0);
    if (err == CUDA_SUCCESS)
        *pPitch = pitch;
    return err;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    if (!cu_stream_ok(hStream))
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_HANDLE : cu_ready();
    return device_alloc(dptr, bytesize, CU_MEM_DEVICE, 0);
}
CU_ALIAS(cuMemAllocAsync_ptsz, cuMemAllocAsync);

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    if (!cu_stream_ok(hStream))
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_HANDLE : cu_ready();
    return device_free(dptr);
}
CU_ALIAS(cuMemFreeAsync_ptsz, cuMemFreeAsync);

/* Free is NVML's (every process's allocations counted), total what a program may allocate. */
CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    const struct cu_device *d = cu_device((CUdevice)c->dev, &err);
    unsigned long long nvml_free;
    if (!cu_nvml_memory(d, &nvml_free))
        nvml_free = d->used < d->total_mem ? d->total_mem - d->used : 0;
    *free = (size_t)(nvml_free < d->total_mem ? nvml_free : d->total_mem);
    *total = d->total_mem;
    return CUDA_SUCCESS;
}

/* The CUDA 2.0 ABI: 32-bit counts, saturated. */
CUresult CUDAAPI cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    size_t f, t;
    CUresult err = cuMemGetInfo_v2(free && total ? &f : NULL, &t);
    if (err == CUDA_SUCCESS) {
        *free = f > 0xffffffffu ? 0xffffffffu : (unsigned int)f;
        *total = t > 0xffffffffu ? 0xffffffffu : (unsigned int)t;
    }
    return err;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    struct cu_alloc a;
    if (!cu_alloc_find((void *)(uintptr_t)dptr, 1, &a) || !on_device(a.kind))
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)(uintptr_t)a.base;
    if (psize)
        *psize = a.size;
    return CUDA_SUCCESS;
}

/* --- page-locked and registered host memory --------------------------------------------------- */

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!pp || bytesize == 0 ||
        (flags & ~(unsigned int)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                                 CU_MEMHOSTALLOC_WRITECOMBINED)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t size = page_round(bytesize);
    void *p = size ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct cu_alloc a = {.base = p, .size = size, .kind = CU_MEM_HOST, .ctx = c, .flags = flags};
    pthread_mutex_lock(&cu_lock);
    int ok = insert(&a) == 0;
    pthread_mutex_unlock(&cu_lock);
    if (!ok) {
        munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc(pp, bytesize, Flags);
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    ptrdiff_t i = p ? exactly(p) : -1;
    int ok = i >= 0 && table[i].kind == CU_MEM_HOST;
    if (ok)
        release_at((size_t)i);
    pthread_mutex_unlock(&cu_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    struct cu_alloc a;
    if (!pdptr || Flags != 0 || !cu_alloc_find(p, 1, &a) || on_device(a.kind))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;             /* the same address: unified addressing */
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    struct cu_alloc a;
    if (!pFlags || !cu_alloc_find(p, 1, &a) || a.kind != CU_MEM_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = a.flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!p || bytesize == 0 ||
        (Flags & ~(unsigned int)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                 CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)))
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_alloc a = {.base = p, .size = bytesize, .kind = CU_MEM_REGISTERED, .ctx = c, .flags = Flags};
    pthread_mutex_lock(&cu_lock);
    ptrdiff_t i = below((char *)p + bytesize - 1);       /* anything overlapping [p, p + size) */
    int overlap = i >= 0 && table[i].base + table[i].size > (char *)p;
    err = overlap ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                  : insert(&a) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&cu_lock);
    return err;
}
CU_ALIAS(cuMemHostRegister, cuMemHostRegister_v2);

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    ptrdiff_t i = p ? exactly(p) : -1;
    int ok = i >= 0 && table[i].kind == CU_MEM_REGISTERED;
    if (ok)
        remove_at((size_t)i);
    pthread_mutex_unlock(&cu_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* --- pointer attributes ------------------------------------------------------------------------ */

static CUresult attribute(void *data, CUpointer_attribute attr, const struct cu_alloc *a, CUdeviceptr ptr)
{
    int device = on_device(a->kind);
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a->ctx;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (a->kind == CU_MEM_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;        /* device memory has no host mapping */
        *(void **)data = (void *)(uintptr_t)ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned int *)data = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *(unsigned long long *)data = a->id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = a->kind == CU_MEM_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = (int)a->ctx->dev;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        *(unsigned int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned int *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(void **)data = NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)a->base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = a->size;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute_, CUdeviceptr ptr)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    struct cu_alloc a;
    if (!data || !cu_alloc_find((void *)(uintptr_t)ptr, 1, &a))
        return CUDA_ERROR_INVALID_VALUE;
    return attribute(data, attribute_, &a, ptr);
}

/* How many bytes each attribute writes, for the zeros an unknown pointer gets. */
static size_t attribute_size(CUpointer_attribute attr)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        return sizeof(size_t);
    default:
        return sizeof(unsigned int);
    }
}

/* Unlike the single query, an address no allocation holds gives zeros, not an error. */
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (numAttributes > 0 && (!attributes || !data))
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_alloc a;
    int known = cu_alloc_find((void *)(uintptr_t)ptr, 1, &a);
    for (unsigned int i = 0; i < numAttributes; i++) {
        if (!data[i])
            continue;
        if (!known || attribute(data[i], attributes[i], &a, ptr) != CUDA_SUCCESS) {
            if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
                *(int *)data[i] = CU_DEVICE_INVALID;
            else
                memset(data[i], 0, attribute_size(attributes[i]));
        }
    }
    return CUDA_SUCCESS;
}
