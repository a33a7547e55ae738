/* Copies and fills: host to device, device to host, device to device, peer,
 * 2D, and the memsets, synchronous and on streams.
 *
 * A device pointer is its host address (memory.c), so a copy is memmove once
 * its device side is checked to lie inside one allocation (INVALID_VALUE
 * otherwise, never a stray write). Every stream is complete when a call
 * returns, so the Async forms are the same copies after checking the stream,
 * and the per-thread default stream forms (_ptds, _ptsz) are the same entry
 * points under their own names.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "cu.h"

static void *ptr(CUdeviceptr p)
{
    return (void *)(uintptr_t)p;
}

/* A current context, and [p, p + n) inside one allocation of device-visible memory. */
static CUresult device_span(CUdeviceptr p, size_t n)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS || n == 0)
        return err;
    struct cu_alloc a;
    return cu_alloc_find(ptr(p), n, &a) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult stream_ok(CUstream s)
{
    return cu_stream_ok(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* --- linear copies --------------------------------------------------------------------------- */

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    CUresult err = device_span(dstDevice, ByteCount);
    if (err == CUDA_SUCCESS && ByteCount)
        memcpy(ptr(dstDevice), srcHost, ByteCount);
    return err;
}
CU_ALIAS(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2);

CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    CUresult err = device_span(srcDevice, ByteCount);
    if (err == CUDA_SUCCESS && ByteCount)
        memcpy(dstHost, ptr(srcDevice), ByteCount);
    return err;
}
CU_ALIAS(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2);

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    CUresult err = device_span(dstDevice, ByteCount);
    if (err == CUDA_SUCCESS)
        err = device_span(srcDevice, ByteCount);
    if (err == CUDA_SUCCESS && ByteCount)
        memmove(ptr(dstDevice), ptr(srcDevice), ByteCount);
    return err;
}
CU_ALIAS(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2);

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                      CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount) : err;
}
CU_ALIAS(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2);

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount) : err;
}
CU_ALIAS(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2);

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount) : err;
}
CU_ALIAS(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2);

/* Unified addressing: either side may be host memory; one an allocation holds must hold all of it. */
static CUresult unified_side(CUdeviceptr p, size_t n)
{
    struct cu_alloc a;
    if (n == 0 || !cu_alloc_find(ptr(p), 1, &a))
        return CUDA_SUCCESS;
    return cu_alloc_find(ptr(p), n, &a) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err == CUDA_SUCCESS)
        err = unified_side(dst, ByteCount);
    if (err == CUDA_SUCCESS)
        err = unified_side(src, ByteCount);
    if (err == CUDA_SUCCESS && ByteCount)
        memmove(ptr(dst), ptr(src), ByteCount);
    return err;
}
CU_ALIAS(cuMemcpy_ptds, cuMemcpy);

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemcpy(dst, src, ByteCount) : err;
}
CU_ALIAS(cuMemcpyAsync_ptsz, cuMemcpyAsync);

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                              CUcontext srcContext, size_t ByteCount)
{
    pthread_mutex_lock(&cu_lock);
    int live = cu_ctx_live(dstContext) && cu_ctx_live(srcContext);
    pthread_mutex_unlock(&cu_lock);
    if (!live)
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_CONTEXT : cu_ready();
    return cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount);
}
CU_ALIAS(cuMemcpyPeer_ptds, cuMemcpyPeer);

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                   CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemcpyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount) : err;
}
CU_ALIAS(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync);

/* --- 2D copies ------------------------------------------------------------------------------- */

/* One side of a 2D copy: its first byte, checked to hold every row when it is device memory. */
static CUresult side_2d(CUmemorytype type, const void *host, CUdeviceptr device, size_t x, size_t y,
                        size_t pitch, size_t width, size_t height, char **out)
{
    if (type == CU_MEMORYTYPE_ARRAY)
        return CUDA_ERROR_NOT_SUPPORTED;            /* no CUDA arrays here */
    if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return CUDA_ERROR_INVALID_VALUE;
    size_t offset, span;
    if ((height > 1 && width > pitch) || __builtin_mul_overflow(y, pitch, &offset) ||
        __builtin_add_overflow(offset, x, &offset) ||
        __builtin_mul_overflow(height ? height - 1 : 0, pitch, &span) ||
        __builtin_add_overflow(span, width, &span))
        return CUDA_ERROR_INVALID_VALUE;
    char *base = type == CU_MEMORYTYPE_HOST ? (char *)host : (char *)ptr(device);
    *out = base + offset;
    if (type == CU_MEMORYTYPE_HOST || width == 0 || height == 0)
        return CUDA_SUCCESS;
    struct cu_alloc a;
    if (type == CU_MEMORYTYPE_UNIFIED && !cu_alloc_find(*out, 1, &a))
        return CUDA_SUCCESS;                        /* host memory by unified address */
    return cu_alloc_find(*out, span, &a) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *p)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    char *src, *dst;
    err = side_2d(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcPitch,
                  p->WidthInBytes, p->Height, &src);
    if (err == CUDA_SUCCESS)
        err = side_2d(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstPitch,
                      p->WidthInBytes, p->Height, &dst);
    if (err != CUDA_SUCCESS)
        return err;
    for (size_t row = 0; row < p->Height && p->WidthInBytes; row++)
        memmove(dst + row * p->dstPitch, src + row * p->srcPitch, p->WidthInBytes);
    return CUDA_SUCCESS;
}
CU_ALIAS(cuMemcpy2D_v2_ptds, cuMemcpy2D_v2);
CU_ALIAS(cuMemcpy2DUnaligned_v2, cuMemcpy2D_v2);
CU_ALIAS(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2D_v2);

CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemcpy2D_v2(pCopy) : err;
}
CU_ALIAS(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync_v2);

/* --- memsets --------------------------------------------------------------------------------- */

/* `height` rows of `width` elements of `size` bytes, `pitch` bytes apart, set to `value`. */
static CUresult fill(CUdeviceptr dst, size_t pitch, unsigned int value, size_t size, size_t width,
                     size_t height)
{
    size_t row, span;
    if (dst % size != 0 || __builtin_mul_overflow(width, size, &row) || (height > 1 && pitch < row) ||
        __builtin_mul_overflow(height ? height - 1 : 0, pitch, &span) ||
        __builtin_add_overflow(span, height ? row : 0, &span))
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : cu_ready();
    CUresult err = device_span(dst, span);
    if (err != CUDA_SUCCESS || row == 0)
        return err;
    for (size_t r = 0; r < height; r++) {
        unsigned char *p = (unsigned char *)ptr(dst) + r * pitch;
        if (size == 1) {
            memset(p, (int)(value & 0xff), row);
            continue;
        }
        memcpy(p, &value, size);                    /* one element (little-endian), then doubling */
        for (size_t done = size; done < row;) {
            size_t n = done < row - done ? done : row - done;
            memcpy(p + done, p, n);
            done += n;
        }
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return fill(dstDevice, N, uc, 1, N, 1);
}
CU_ALIAS(cuMemsetD8_v2_ptds, cuMemsetD8_v2);

CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return fill(dstDevice, N * 2, us, 2, N, 1);
}
CU_ALIAS(cuMemsetD16_v2_ptds, cuMemsetD16_v2);

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return fill(dstDevice, N * 4, ui, 4, N, 1);
}
CU_ALIAS(cuMemsetD32_v2_ptds, cuMemsetD32_v2);

CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                 size_t Height)
{
    return fill(dstDevice, dstPitch, uc, 1, Width, Height);
}
CU_ALIAS(cuMemsetD2D8_v2_ptds, cuMemsetD2D8_v2);

CUresult CUDAAPI cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                  size_t Height)
{
    return fill(dstDevice, dstPitch, us, 2, Width, Height);
}
CU_ALIAS(cuMemsetD2D16_v2_ptds, cuMemsetD2D16_v2);

CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                  size_t Height)
{
    return fill(dstDevice, dstPitch, ui, 4, Width, Height);
}
CU_ALIAS(cuMemsetD2D32_v2_ptds, cuMemsetD2D32_v2);

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemsetD8_v2(dstDevice, uc, N) : err;
}
CU_ALIAS(cuMemsetD8Async_ptsz, cuMemsetD8Async);

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemsetD16_v2(dstDevice, us, N) : err;
}
CU_ALIAS(cuMemsetD16Async_ptsz, cuMemsetD16Async);

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemsetD32_v2(dstDevice, ui, N) : err;
}
CU_ALIAS(cuMemsetD32Async_ptsz, cuMemsetD32Async);

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                   size_t Height, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemsetD2D8_v2(dstDevice, dstPitch, uc, Width, Height) : err;
}
CU_ALIAS(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async);

CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                    size_t Height, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemsetD2D16_v2(dstDevice, dstPitch, us, Width, Height) : err;
}
CU_ALIAS(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async);

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                    size_t Height, CUstream hStream)
{
    CUresult err = stream_ok(hStream);
    return err == CUDA_SUCCESS ? cuMemsetD2D32_v2(dstDevice, dstPitch, ui, Width, Height) : err;
}
CU_ALIAS(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async);
