/* Streams and events. Nothing is ever pending (every call completes before it
 * returns), so a stream is only its context, flags and priority, a query is
 * always done, a callback or host function runs at once, and an event is the
 * time it was recorded. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "cu.h"

struct CUstream_st {
    struct CUctx_st *ctx;
    unsigned int flags;
    int priority;
    unsigned long long id;
};

struct CUevent_st {
    unsigned int flags;
    int recorded;
    struct timespec at;
};

static unsigned long long next_stream_id = 3;      /* 0-2: the NULL, legacy and per-thread streams */

static int is(const void *h, enum cu_kind kind)
{
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(h, kind);
    pthread_mutex_unlock(&cu_lock);
    return ok;
}

int cu_stream_ok(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || is(s, CU_KIND_STREAM);
}

/* A call naming stream `s`: a current context and a stream it may name. */
static CUresult on_stream(CUstream s)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    return cu_stream_ok(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult make(CUstream *phStream, unsigned int flags, int priority)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!phStream || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = malloc(sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&cu_lock);
    *s = (struct CUstream_st){c, flags, priority < -5 ? -5 : priority > 0 ? 0 : priority, next_stream_id++};
    int ok = cu_handle_add(s, CU_KIND_STREAM) == 0;
    pthread_mutex_unlock(&cu_lock);
    if (!ok) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phStream = s;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return make(phStream, Flags, 0);
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return make(phStream, flags, priority);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(hStream, CU_KIND_STREAM);
    if (ok)
        cu_handle_remove(hStream);
    pthread_mutex_unlock(&cu_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    free(hStream);
    return CUDA_SUCCESS;
}
CU_ALIAS(cuStreamDestroy, cuStreamDestroy_v2);

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    return on_stream(hStream);
}
CU_ALIAS(cuStreamSynchronize_ptsz, cuStreamSynchronize);

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    return on_stream(hStream);
}
CU_ALIAS(cuStreamQuery_ptsz, cuStreamQuery);

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    CUresult err = on_stream(hStream);
    if (err != CUDA_SUCCESS)
        return err;
    if (Flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    return is(hEvent, CU_KIND_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CU_ALIAS(cuStreamWaitEvent_ptsz, cuStreamWaitEvent);

CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    CUresult err = on_stream(hStream);
    if (err != CUDA_SUCCESS)
        return err;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = hStream == NULL || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ? 0
                                                                                               : hStream->flags;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuStreamGetFlags_ptsz, cuStreamGetFlags);

CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
    CUresult err = on_stream(hStream);
    if (err != CUDA_SUCCESS)
        return err;
    if (!priority)
        return CUDA_ERROR_INVALID_VALUE;
    *priority = hStream == NULL || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD
                    ? 0 : hStream->priority;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuStreamGetPriority_ptsz, cuStreamGetPriority);

CUresult CUDAAPI cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    CUresult err = on_stream(hStream);
    if (err != CUDA_SUCCESS)
        return err;
    if (!streamId)
        return CUDA_ERROR_INVALID_VALUE;
    *streamId = hStream == NULL || hStream == CU_STREAM_LEGACY ? 1
                : hStream == CU_STREAM_PER_THREAD ? 2 : hStream->id;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuStreamGetId_ptsz, cuStreamGetId);

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_stream_ok(hStream))
        return CUDA_ERROR_INVALID_HANDLE;
    *pctx = hStream == NULL || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ? c
                                                                                              : hStream->ctx;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuStreamGetCtx_ptsz, cuStreamGetCtx);

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
    CUresult err = on_stream(hStream);
    if (err != CUDA_SUCCESS)
        return err;
    if (!callback || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    callback(hStream, CUDA_SUCCESS, userData);      /* the stream is already idle */
    return CUDA_SUCCESS;
}
CU_ALIAS(cuStreamAddCallback_ptsz, cuStreamAddCallback);

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    CUresult err = on_stream(hStream);
    if (err != CUDA_SUCCESS)
        return err;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    fn(userData);
    return CUDA_SUCCESS;
}
CU_ALIAS(cuLaunchHostFunc_ptsz, cuLaunchHostFunc);

CUresult CUDAAPI cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
{
    (void)dptr;
    (void)length;
    (void)flags;
    return on_stream(hStream);
}
CU_ALIAS(cuStreamAttachMemAsync_ptsz, cuStreamAttachMemAsync);

/* --- events ------------------------------------------------------------------------------ */

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!phEvent || (Flags & ~(unsigned int)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                              CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->flags = Flags;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_add(e, CU_KIND_EVENT) == 0;
    pthread_mutex_unlock(&cu_lock);
    if (!ok) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phEvent = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    CUresult err = on_stream(hStream);
    if (err != CUDA_SUCCESS)
        return err;
    if (flags & ~(unsigned int)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(hEvent, CU_KIND_EVENT);
    if (ok) {
        hEvent->at = now;
        hEvent->recorded = 1;
    }
    pthread_mutex_unlock(&cu_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CU_ALIAS(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags);

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return cuEventRecordWithFlags(hEvent, hStream, 0);
}
CU_ALIAS(cuEventRecord_ptsz, cuEventRecord);

static CUresult event_done(CUevent hEvent)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    return is(hEvent, CU_KIND_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    return event_done(hEvent);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    return event_done(hEvent);
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(hEvent, CU_KIND_EVENT);
    if (ok)
        cu_handle_remove(hEvent);
    pthread_mutex_unlock(&cu_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    free(hEvent);
    return CUDA_SUCCESS;
}
CU_ALIAS(cuEventDestroy, cuEventDestroy_v2);

/* Milliseconds between two recorded events; both must time (no CU_EVENT_DISABLE_TIMING). */
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(hStart, CU_KIND_EVENT) && cu_handle_is(hEnd, CU_KIND_EVENT) &&
             hStart->recorded && hEnd->recorded &&
             !((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING);
    if (ok)
        *pMilliseconds = (float)((double)(hEnd->at.tv_sec - hStart->at.tv_sec) * 1e3 +
                                 (double)(hEnd->at.tv_nsec - hStart->at.tv_nsec) / 1e6);
    pthread_mutex_unlock(&cu_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
