/* The published node and the handles of its GPUs (the first half of what was init.c;
 * nvmlInit and the calls that find a handle are ../api/init.c).
 *
 * Init and shutdown are reference counted under one mutex. The first init
 * builds a node; if it equals the published one (same state, same
 * environment), the published one stays, else the new one is published and
 * the old one is kept alive (never freed: a thread may still hold its
 * handles). Queries read the published node without a lock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine.h"

struct nvmlDevice_st mock_handles[MOCK_MAX_GPUS];

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int init_refs;
static struct mock_node *published;

const struct mock_node *mock_node(void)
{
    return __atomic_load_n(&published, __ATOMIC_ACQUIRE);
}

nvmlReturn_t mock_require_init(void)
{
    return __atomic_load_n(&init_refs, __ATOMIC_ACQUIRE) > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

static nvmlReturn_t visible_slot(nvmlDevice_t device, const struct mock_node *n, unsigned int *slot)
{
    if (!device || !n)
        return NVML_ERROR_INVALID_ARGUMENT;
    uintptr_t at = (uintptr_t)device, first = (uintptr_t)&mock_handles[0];
    if (at < first || (at - first) % sizeof mock_handles[0] != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    uintptr_t i = (at - first) / sizeof mock_handles[0];
    if (i >= n->nvisible)
        return NVML_ERROR_INVALID_ARGUMENT;
    *slot = (unsigned int)i;
    return NVML_SUCCESS;
}

/* `mokka ctl set GPU lost=true` (overrides `failure.lost`): every query of that
 * GPU, its handle included, fails as a GPU that fell off the bus does. */
int mock_gpu_lost(const struct mock_gpu *g)
{
    int lost = 0;
    return gpu_flag(g, MOKKA_STATE_LOST_KEY, &lost) == 1 && lost;
}

nvmlReturn_t mock_check_device(nvmlDevice_t device)
{
    const struct mock_gpu *g;
    return mock_gpu_of(device, &g);
}

nvmlReturn_t mock_gpu_of(nvmlDevice_t device, const struct mock_gpu **g)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    unsigned int slot;
    ret = visible_slot(device, n, &slot);
    if (ret != NVML_SUCCESS)                      /* a MIG device answers only what mig_device.c says */
        return n ? n->mig_hooks->refuse(device) : ret;
    if (mock_gpu_lost(&n->gpus[n->visible[slot]]))
        return NVML_ERROR_GPU_IS_LOST;
    *g = &n->gpus[n->visible[slot]];
    return NVML_SUCCESS;
}

nvmlDevice_t mock_handle_of(const struct mock_gpu *g)
{
    return &mock_handles[g->index];
}

nvmlReturn_t mock_init(const struct mig_hooks *mig)
{
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t ret = NVML_SUCCESS;
    if (init_refs == 0) {
        struct mock_node *fresh = NULL;
        ret = node_build(mig, &fresh);
        if (ret == NVML_SUCCESS) {
            struct mock_node *old = published;
            if (old && node_same(old, fresh)) {
                node_free(fresh);
            } else {
                fresh->overrides = overrides_open(fresh->overrides_dir, fresh->count);
                overrides_start(fresh->overrides);
                __atomic_store_n(&published, fresh, __ATOMIC_RELEASE);
            }
        }
    }
    if (ret == NVML_SUCCESS)
        __atomic_store_n(&init_refs, init_refs + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&init_lock);
    return ret;
}

nvmlReturn_t mock_shutdown(void)
{
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t ret = NVML_ERROR_UNINITIALIZED;
    if (init_refs > 0) {
        __atomic_store_n(&init_refs, init_refs - 1, __ATOMIC_RELEASE);
        ret = NVML_SUCCESS;
    }
    pthread_mutex_unlock(&init_lock);
    return ret;
}
