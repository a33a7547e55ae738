/* Modules, libraries, functions and launches: accepted, and nothing executes.
 *
 * Any image is a module (nothing is parsed or compiled) and any name in it a
 * function, the same handle each time it is asked for; a library's kernel is
 * its function (a CUkernel may be passed wherever a CUfunction is). A launch
 * is checked as the driver checks it (a live function, block and grid within
 * the device's limits, dynamic shared memory within the function's) and then
 * returns: kernels are no-ops. A module has no globals this mock could know
 * the size of, so asking for one finds none.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cu.h"

#define FUNCTION_NAME_MAX 1024

struct CUfunc_st {
    struct CUmod_st *mod;
    struct CUfunc_st *next;
    int max_dynamic_smem;              /* -1: the device's default (48 KiB) */
    int carveout;
    int cluster[3];
    int non_portable_cluster, cluster_policy;
    CUfunc_cache cache;
    char name[FUNCTION_NAME_MAX];
};

struct CUmod_st {
    struct CUctx_st *ctx;              /* NULL: a library's, usable from every context */
    struct CUfunc_st *funcs;
};

struct CUlib_st {
    int first;                         /* unused: keeps mod off the library's own address, since */
    struct CUmod_st mod;               /* the library and its module are two handles of two kinds */
};

/* --- modules ---------------------------------------------------------------------------- */

static CUresult new_module(CUmodule *module, const void *image, struct CUctx_st **ctx_out)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->ctx = c;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_add(m, CU_KIND_MODULE) == 0;
    pthread_mutex_unlock(&cu_lock);
    if (!ok) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *module = m;
    if (ctx_out)
        *ctx_out = c;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    return new_module(module, image, NULL);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    if (numOptions > 0 && (!options || !optionValues))
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : cu_ready();
    return new_module(module, image, NULL);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return new_module(module, fatCubin, NULL);
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    if (access(fname, R_OK) != 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    return new_module(module, fname, NULL);
}

static void drop_functions(struct CUmod_st *m)
{
    for (struct CUfunc_st *f = m->funcs, *next; f; f = next) {
        next = f->next;
        cu_handle_remove(f);
        free(f);
    }
    m->funcs = NULL;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(hmod, CU_KIND_MODULE) && hmod->ctx;
    if (ok) {
        drop_functions(hmod);
        cu_handle_remove(hmod);
    }
    pthread_mutex_unlock(&cu_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    free(hmod);
    return CUDA_SUCCESS;
}

/* The module's function `name`, made the first time it is asked for. Under cu_lock. */
static CUresult function_of(struct CUmod_st *m, const char *name, struct CUfunc_st **out)
{
    if (!name || !*name || strlen(name) >= FUNCTION_NAME_MAX)
        return CUDA_ERROR_NOT_FOUND;
    for (struct CUfunc_st *f = m->funcs; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            *out = f;
            return CUDA_SUCCESS;
        }
    }
    struct CUfunc_st *f = calloc(1, sizeof *f);
    if (!f || cu_handle_add(f, CU_KIND_FUNCTION) != 0) {
        free(f);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    f->mod = m;
    f->max_dynamic_smem = -1;
    f->carveout = -1;
    f->cache = CU_FUNC_CACHE_PREFER_NONE;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->next = m->funcs;
    m->funcs = f;
    *out = f;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    err = cu_handle_is(hmod, CU_KIND_MODULE) ? function_of(hmod, name, hfunc) : CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_unlock(&cu_lock);
    return err;
}

CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    (void)dptr;
    (void)bytes;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(hmod, CU_KIND_MODULE);
    pthread_mutex_unlock(&cu_lock);
    return ok ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
}

/* CUDA_MODULE_LOADING=EAGER asks for eager loading; lazy is the default since CUDA 12.2. */
CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    const char *env = getenv(MOKKA_ENV_CUDA_MODULE_LOADING);
    *mode = env && strcmp(env, MOKKA_CUDA_MODULE_LOADING_EAGER) == 0 ? CU_MODULE_EAGER_LOADING
                                                                    : CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}

/* --- libraries ----------------------------------------------------------------------------- */

static CUresult new_library(CUlibrary *library, const void *code)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUlib_st *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_add(l, CU_KIND_LIBRARY) == 0;
    if (ok && cu_handle_add(&l->mod, CU_KIND_MODULE) != 0) {
        cu_handle_remove(l);
        ok = 0;
    }
    pthread_mutex_unlock(&cu_lock);
    if (!ok) {
        free(l);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *library = l;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
    (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    return new_library(library, code);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                       void **jitOptionsValues, unsigned int numJitOptions,
                                       CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                       unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
    (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    if (fileName && access(fileName, R_OK) != 0)
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_FILE_NOT_FOUND : cu_ready();
    return new_library(library, fileName);
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(library, CU_KIND_LIBRARY);
    if (ok) {
        drop_functions(&library->mod);
        cu_handle_remove(&library->mod);
        cu_handle_remove(library);
    }
    pthread_mutex_unlock(&cu_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    free(library);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUfunc_st *f = NULL;
    pthread_mutex_lock(&cu_lock);
    err = cu_handle_is(library, CU_KIND_LIBRARY) ? function_of(&library->mod, name, &f)
                                                 : CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_unlock(&cu_lock);
    if (err == CUDA_SUCCESS)
        *pKernel = (CUkernel)f;
    return err;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(library, CU_KIND_LIBRARY);
    pthread_mutex_unlock(&cu_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    *pMod = &library->mod;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    (void)dptr;
    (void)bytes;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(library, CU_KIND_LIBRARY);
    pthread_mutex_unlock(&cu_lock);
    return ok ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
}

/* --- functions ------------------------------------------------------------------------------ */

/* A live function (a kernel too) and the device whose limits apply to it. */
static CUresult function_device(CUfunction f, const struct cu_device **d)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(f, CU_KIND_FUNCTION);
    unsigned int dev = ok && f->mod->ctx ? f->mod->ctx->dev : c->dev;
    pthread_mutex_unlock(&cu_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    *d = cu_device((CUdevice)dev, &err);
    return err;
}

static int dynamic_smem_limit(CUfunction f, const struct cu_device *d)
{
    return f->max_dynamic_smem >= 0 ? f->max_dynamic_smem
                                    : d->attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    const struct cu_device *d;
    CUresult err = function_device((CUfunction)kernel, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    *pFunc = (CUfunction)kernel;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    const struct cu_device *d;
    CUresult err = function_device(hfunc, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    int cc = d->cc_major * 10 + d->cc_minor;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = d->attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *pi = cc;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *pi = dynamic_smem_limit(hfunc, d);
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        *pi = hfunc->carveout;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        *pi = hfunc->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        *pi = hfunc->non_portable_cluster;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        *pi = hfunc->cluster_policy;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:     /* nothing was compiled: no static usage */
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        *pi = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    const struct cu_device *d;
    CUresult err = function_device(hfunc, &d);
    if (err != CUDA_SUCCESS)
        return err;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || value > d->attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN])
            return CUDA_ERROR_INVALID_VALUE;
        hfunc->max_dynamic_smem = value;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100)
            return CUDA_ERROR_INVALID_VALUE;
        hfunc->carveout = value;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (value < 0)
            return CUDA_ERROR_INVALID_VALUE;
        hfunc->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        hfunc->non_portable_cluster = value != 0;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        hfunc->cluster_policy = value;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    CUresult err;
    if (!cu_device(dev, &err))
        return err;
    return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    CUresult err;
    if (!cu_device(dev, &err))
        return err;
    return cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    const struct cu_device *d;
    CUresult err = function_device(hfunc, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if ((unsigned int)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    hfunc->cache = config;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    CUresult err;
    if (!cu_device(dev, &err))
        return err;
    return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
    const struct cu_device *d;
    CUresult err = function_device(hfunc, &d);
    if (err != CUDA_SUCCESS)
        return err;
    return (unsigned int)config <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS
                                                                            : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    const struct cu_device *d;
    CUresult err = function_device(hfunc, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    *name = hfunc->name;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
    return cuFuncGetName(name, (CUfunction)hfunc);
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    const struct cu_device *d;
    CUresult err = function_device(hfunc, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    *hmod = hfunc->mod;
    return CUDA_SUCCESS;
}

/* --- launches ------------------------------------------------------------------------------- */

static CUresult check_launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int smem, CUstream stream,
                             void **params, void **extra)
{
    const struct cu_device *d;
    CUresult err = function_device(f, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!cu_stream_ok(stream))
        return CUDA_ERROR_INVALID_HANDLE;
    const int *a = d->attrs;
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    if (!gx || !gy || !gz || !bx || !by || !bz || gx > (unsigned int)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] ||
        gy > (unsigned int)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] ||
        gz > (unsigned int)a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z] ||
        bx > (unsigned int)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
        by > (unsigned int)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] ||
        bz > (unsigned int)a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z] ||
        (unsigned long long)bx * by * bz > (unsigned long long)a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK])
        return CUDA_ERROR_INVALID_VALUE;
    if (smem > (unsigned int)dynamic_smem_limit(f, d))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;                            /* launched: nothing executes */
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    return check_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                        hStream, kernelParams, extra);
}
CU_ALIAS(cuLaunchKernel_ptsz, cuLaunchKernel);

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    if (!config)
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : cu_ready();
    if (config->numAttrs > 0 && !config->attrs)
        return CUDA_ERROR_INVALID_VALUE;
    return check_launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                        config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                        kernelParams, extra);
}
CU_ALIAS(cuLaunchKernelEx_ptsz, cuLaunchKernelEx);

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                           unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                           void **kernelParams)
{
    return check_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                        hStream, kernelParams, NULL);
}
CU_ALIAS(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel);

/* --- occupancy ------------------------------------------------------------------------------- */

/* Resident blocks of `block` threads with `smem` dynamic shared memory each, on one multiprocessor. */
static int resident_blocks(const struct cu_device *d, int block, size_t smem)
{
    const int *a = d->attrs;
    int warps = (block + a[CU_DEVICE_ATTRIBUTE_WARP_SIZE] - 1) / a[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
    int by_threads = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] / (warps * a[CU_DEVICE_ATTRIBUTE_WARP_SIZE]);
    int n = by_threads < a[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR]
                ? by_threads : a[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR];
    if (smem > 0) {
        size_t per = smem + (size_t)a[CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK];
        size_t by_smem = (size_t)a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] / per;
        if (by_smem < (size_t)n)
            n = (int)by_smem;
    }
    return n < 0 ? 0 : n;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                                      int blockSize, size_t dynamicSMemSize,
                                                                      unsigned int flags)
{
    const struct cu_device *d;
    CUresult err = function_device(func, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!numBlocks || blockSize <= 0 || blockSize > d->attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] ||
        flags & ~(unsigned int)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
        return CUDA_ERROR_INVALID_VALUE;
    *numBlocks = resident_blocks(d, blockSize, dynamicSMemSize);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                             size_t dynamicSMemSize)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

/* The block size (a multiple of the warp, at most the limit) keeping the most threads resident. */
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
                                                           CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                           size_t dynamicSMemSize, int blockSizeLimit,
                                                           unsigned int flags)
{
    const struct cu_device *d;
    CUresult err = function_device(func, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!minGridSize || !blockSize || flags & ~(unsigned int)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
        return CUDA_ERROR_INVALID_VALUE;
    const int *a = d->attrs;
    int limit = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    if (blockSizeLimit > 0 && blockSizeLimit < limit)
        limit = blockSizeLimit;
    int warp = a[CU_DEVICE_ATTRIBUTE_WARP_SIZE], best = 0, best_blocks = 0;
    for (int size = limit / warp * warp; size > 0; size -= warp) {
        size_t smem = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(size) : dynamicSMemSize;
        int blocks = resident_blocks(d, size, smem);
        if ((long long)blocks * size > (long long)best_blocks * best) {
            best = size;
            best_blocks = blocks;
        }
    }
    *blockSize = best;
    *minGridSize = best_blocks * a[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                  size_t dynamicSMemSize, int blockSizeLimit)
{
    return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                                     dynamicSMemSize, blockSizeLimit, 0);
}

CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
                                                         int blockSize)
{
    const struct cu_device *d;
    CUresult err = function_device(func, &d);
    if (err != CUDA_SUCCESS)
        return err;
    if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    const int *a = d->attrs;
    if (resident_blocks(d, blockSize, 0) < numBlocks) {
        *dynamicSmemSize = 0;
        return CUDA_SUCCESS;
    }
    size_t per = (size_t)a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] / (size_t)numBlocks;
    size_t reserved = (size_t)a[CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK];
    size_t most = (size_t)a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
    per = per > reserved ? per - reserved : 0;
    *dynamicSmemSize = per < most ? per : most;
    return CUDA_SUCCESS;
}
