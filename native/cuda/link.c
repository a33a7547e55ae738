/* The JIT linker (cuLink*): accepted, and nothing executes.
 *
 * A link state takes any inputs (nothing is parsed, compiled or linked) and
 * completes to a small fixed image it owns until cuLinkDestroy; any image is a
 * module (module.c), so cuModuleLoadData accepts it and every name in it is a
 * function. The log options are honoured as the driver honours them: a log
 * buffer given with a size above 0 holds an empty string, and at completion
 * each log's size option (OUT: the bytes filled) reads 0, written into the
 * caller's option values, which cuda.h says must live as long as the state
 * does; CU_JIT_WALL_TIME's value points at a float (NVIDIA's ptxjit sample,
 * cuda-bindings), which reads 0 ms.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cu.h"

#define MAX_OUTPUTS 8

/* What cuLinkComplete hands out: an ELF's magic and a word of what it is. */
static const char IMAGE[64] = "\x7f" "ELF mock CUDA: a linked image (nothing executes)";

struct CUlinkState_st {
    struct CUctx_st *ctx;
    unsigned int inputs;
    unsigned int outputs, timers;      /* option slots written at completion */
    void **out[MAX_OUTPUTS];           /* a log's bytes filled */
    float *timer[MAX_OUTPUTS];         /* CU_JIT_WALL_TIME's float */
    char image[sizeof IMAGE];
};

/* The size (IN) a log buffer option names, 0 when it is not given. */
static size_t log_size(unsigned int n, const CUjit_option *options, void *const *values, CUjit_option which)
{
    for (unsigned int i = 0; i < n; i++)
        if (options[i] == which)
            return (size_t)(unsigned int)(uintptr_t)values[i];
    return 0;
}

/* Empty the log buffers given a size above 0. */
static void empty_logs(unsigned int n, const CUjit_option *options, void **values)
{
    for (unsigned int i = 0; i < n; i++) {
        CUjit_option size_option = options[i] == CU_JIT_INFO_LOG_BUFFER    ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
                                   : options[i] == CU_JIT_ERROR_LOG_BUFFER ? CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
                                                                           : (CUjit_option)-1;
        if (size_option != (CUjit_option)-1 && values[i] && log_size(n, options, values, size_option) > 0)
            *(char *)values[i] = '\0';
    }
}

CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                                 CUlinkState *stateOut)
{
    struct CUctx_st *c;
    CUresult err = cu_current(&c);
    if (err != CUDA_SUCCESS)
        return err;
    if (!stateOut || (numOptions > 0 && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUlinkState_st *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = c;
    memcpy(s->image, IMAGE, sizeof IMAGE);
    for (unsigned int i = 0; i < numOptions; i++) {
        if ((options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES || options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) &&
            s->outputs < MAX_OUTPUTS)
            s->out[s->outputs++] = &optionValues[i];
        else if (options[i] == CU_JIT_WALL_TIME && optionValues[i] && s->timers < MAX_OUTPUTS)
            s->timer[s->timers++] = optionValues[i];
    }
    empty_logs(numOptions, options, optionValues);
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_add(s, CU_KIND_LINK) == 0;
    pthread_mutex_unlock(&cu_lock);
    if (!ok) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *stateOut = s;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuLinkCreate, cuLinkCreate_v2);

/* A live link state: CUDA_SUCCESS, else the init error or INVALID_HANDLE. */
static CUresult live(CUlinkState state)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(state, CU_KIND_LINK);
    pthread_mutex_unlock(&cu_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult add_input(CUlinkState state, CUjitInputType type, unsigned int numOptions,
                          CUjit_option *options, void **optionValues)
{
    if ((unsigned int)type >= CU_JIT_NUM_INPUT_TYPES || (numOptions > 0 && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&cu_lock);
    state->inputs++;
    pthread_mutex_unlock(&cu_lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
                                  unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    CUresult err = live(state);
    if (err != CUDA_SUCCESS)
        return err;
    (void)name;
    if (!data || !size)
        return CUDA_ERROR_INVALID_VALUE;
    return add_input(state, type, numOptions, options, optionValues);
}
CU_ALIAS(cuLinkAddData, cuLinkAddData_v2);

CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
                                  CUjit_option *options, void **optionValues)
{
    CUresult err = live(state);
    if (err != CUDA_SUCCESS)
        return err;
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    if (access(path, R_OK) != 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    return add_input(state, type, numOptions, options, optionValues);
}
CU_ALIAS(cuLinkAddFile, cuLinkAddFile_v2);

CUresult CUDAAPI cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    CUresult err = live(state);
    if (err != CUDA_SUCCESS)
        return err;
    if (!cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < state->outputs; i++)
        *state->out[i] = NULL;                      /* 0 bytes of log, in 0 ms: nothing was linked */
    for (unsigned int i = 0; i < state->timers; i++)
        *state->timer[i] = 0.0f;
    *cubinOut = state->image;
    if (sizeOut)
        *sizeOut = sizeof state->image;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLinkDestroy(CUlinkState state)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    pthread_mutex_lock(&cu_lock);
    int ok = cu_handle_is(state, CU_KIND_LINK);
    if (ok)
        cu_handle_remove(state);
    pthread_mutex_unlock(&cu_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    free(state);
    return CUDA_SUCCESS;
}
