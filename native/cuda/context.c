/* Contexts: each device's primary context (retained and released), contexts
 * created and destroyed, and each thread's stack of current contexts.
 *
 * A device holds a process record (NVML's process list, memory used) from its
 * first live context to its last: cu_account is told whenever that count or
 * the memory held changes. A context going away frees its allocations.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cu.h"

#define STACK_MAX 64

static __thread struct CUctx_st *stack[STACK_MAX];
static __thread unsigned int depth;
static unsigned long long next_id = 1;

/* CUlimit defaults: stack 1 KiB, printf FIFO 1 MiB, heap 8 MiB, sync depth 2, 2048 pending
 * launches, 32-byte L2 fetches, no persisting L2. */
static const size_t DEFAULT_LIMITS[8] = {1024, 1048576, 8388608, 2, 2048, 32, 0, 0};

int cu_ctx_live(const struct CUctx_st *ctx)
{
    if (!ctx || !cu_handle_is(ctx, CU_KIND_CONTEXT))
        return 0;
    return !ctx->primary || ctx->retained > 0;
}

CUresult cu_current(struct CUctx_st **ctx)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    struct CUctx_st *top = depth ? stack[depth - 1] : NULL;
    pthread_mutex_lock(&cu_lock);
    int live = cu_ctx_live(top);
    pthread_mutex_unlock(&cu_lock);
    if (!live)
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctx = top;
    return CUDA_SUCCESS;
}

static void init_ctx(struct CUctx_st *c, unsigned int dev, unsigned int flags, int primary)
{
    memset(c, 0, sizeof *c);
    c->dev = dev;
    c->flags = flags;
    c->primary = primary;
    c->id = next_id++;
    memcpy(c->limits, DEFAULT_LIMITS, sizeof c->limits);
    c->cache_config = CU_FUNC_CACHE_PREFER_NONE;
}

/* A context of device `d` came to life or went away. Under cu_lock. */
static void count_context(struct cu_device *d, int delta)
{
    d->contexts = (unsigned int)((int)d->contexts + delta);
    cu_account(d);
}

/* --- primary contexts ------------------------------------------------------------------- */

static struct CUctx_st *primary_of(struct cu_device *d, CUdevice dev)
{
    if (!d->primary) {
        struct CUctx_st *c = malloc(sizeof *c);
        if (!c)
            return NULL;
        init_ctx(c, (unsigned int)dev, 0, 1);
        if (cu_handle_add(c, CU_KIND_CONTEXT) != 0) {
            free(c);
            return NULL;
        }
        d->primary = c;
    }
    return d->primary;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult err;
    struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    struct CUctx_st *c = primary_of(d, dev);
    if (c && c->retained++ == 0)
        count_context(d, +1);
    pthread_mutex_unlock(&cu_lock);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pctx = c;
    return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev)
{
    CUresult err;
    struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    pthread_mutex_lock(&cu_lock);
    struct CUctx_st *c = d->primary;
    err = CUDA_SUCCESS;
    if (!c || c->retained == 0) {
        err = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--c->retained == 0) {
        cu_alloc_drop_context(c);
        count_context(d, -1);
    }
    pthread_mutex_unlock(&cu_lock);
    return err;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return primary_release(dev);
}
CU_ALIAS(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult err;
    struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (flags & ~(unsigned int)(CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                                CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    struct CUctx_st *c = primary_of(d, dev);
    if (c)
        c->flags = flags;
    pthread_mutex_unlock(&cu_lock);
    return c ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CU_ALIAS(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2);

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult err;
    struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    *flags = d->primary ? d->primary->flags : 0;
    *active = d->primary && d->primary->retained > 0;
    pthread_mutex_unlock(&cu_lock);
    return CUDA_SUCCESS;
}

/* Everything the primary context holds goes; whoever retained it still holds it. */
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUresult err;
    struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    pthread_mutex_lock(&cu_lock);
    if (d->primary) {
        cu_alloc_drop_context(d->primary);
        d->primary->flags = 0;
        cu_account(d);
    }
    pthread_mutex_unlock(&cu_lock);
    return CUDA_SUCCESS;
}
CU_ALIAS(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2);

/* --- created contexts ------------------------------------------------------------------- */

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult err;
    struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (depth >= STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *c = malloc(sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&cu_lock);
    init_ctx(c, (unsigned int)dev, flags, 0);
    int added = cu_handle_add(c, CU_KIND_CONTEXT) == 0;
    if (added)
        count_context(d, +1);
    pthread_mutex_unlock(&cu_lock);
    if (!added) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    stack[depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuCtxCreate, cuCtxCreate_v2);

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    if (numParams > 0)
        return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    if (!ctx || !cu_handle_is(ctx, CU_KIND_CONTEXT) || ctx->primary) {
        pthread_mutex_unlock(&cu_lock);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    cu_alloc_drop_context(ctx);
    cu_handle_remove(ctx);
    count_context(cu_device((CUdevice)ctx->dev, &err), -1);
    pthread_mutex_unlock(&cu_lock);
    for (unsigned int i = depth; i-- > 0;) {        /* off this thread's stack */
        if (stack[i] == ctx) {
            memmove(&stack[i], &stack[i + 1], (depth - i - 1) * sizeof stack[0]);
            depth--;
        }
    }
    free(ctx);
    return CUDA_SUCCESS;
}
CU_ALIAS(cuCtxDestroy, cuCtxDestroy_v2);

/* --- the current context ------------------------------------------------------------------ */

static int valid(CUcontext ctx)
{
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(ctx, CU_KIND_CONTEXT);
    pthread_mutex_unlock(&cu_lock);
    return ok;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!ctx || !valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth >= STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuCtxPushCurrent, cuCtxPushCurrent_v2);

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *top = stack[--depth];
    if (pctx)
        *pctx = top;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuCtxPopCurrent, cuCtxPopCurrent_v2);

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!ctx) {                                     /* pops the top, if any */
        if (depth > 0)
            depth--;
        return CUDA_SUCCESS;
    }
    if (!valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == 0)
        depth = 1;
    stack[depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = depth ? stack[depth - 1] : NULL;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = (CUdevice)c->dev;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = c->flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    c->flags = flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!ctx && cu_current(&ctx) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    *ctxId = ctx->id;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!ctx && cu_current(&ctx) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 3020;                                /* every context has the 3.2 ABI */
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    struct CUctx_st *c;
    return cu_current(&c);                          /* nothing is ever pending */
}

CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!pvalue || (unsigned int)limit >= sizeof DEFAULT_LIMITS / sizeof DEFAULT_LIMITS[0])
        return CUDA_ERROR_INVALID_VALUE;
    *pvalue = c->limits[limit];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if ((unsigned int)limit >= sizeof DEFAULT_LIMITS / sizeof DEFAULT_LIMITS[0])
        return CUDA_ERROR_INVALID_VALUE;
    c->limits[limit] = value;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pconfig = c->cache_config;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if ((unsigned int)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    c->cache_config = config;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!pConfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    return (unsigned int)config <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS
                                                                            : CUDA_ERROR_INVALID_VALUE;
}

/* Priorities run from 0 (least) to -5 (greatest), as on every board since Volta. */
CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxResetPersistingL2Cache(void)
{
    struct CUctx_st *c;
    return cu_current(&c);
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!peerContext || !valid(peerContext))
        return CUDA_ERROR_INVALID_CONTEXT;
    const struct cu_node *n = cu_node();
    if (peerContext->dev == c->dev || !cu_nvml_p2p(&n->dev[c->dev], &n->dev[peerContext->dev]))
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    return peerContext && valid(peerContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
