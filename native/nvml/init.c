/* nvmlInit / nvmlShutdown, the handles and how to find them.
 *
 * Init and shutdown are reference counted under one mutex. The first init
 * builds a node; if it equals the published one (same state, same
 * environment), the published one stays, else the new one is published and
 * the old one is kept alive (never freed: a thread may still hold its
 * handles). Queries read the published node without a lock.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mig.h"
#include "mock.h"

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
    if (ret != NVML_SUCCESS)
        return mig_refuse(device);                /* a MIG device answers only what mig_device.c says */
    if (mock_gpu_lost(&n->gpus[n->visible[slot]]))
        return NVML_ERROR_GPU_IS_LOST;
    *g = &n->gpus[n->visible[slot]];
    return NVML_SUCCESS;
}

nvmlDevice_t mock_handle_of(const struct mock_gpu *g)
{
    return &mock_handles[g->index];
}

static nvmlReturn_t init_once(void)
{
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t ret = NVML_SUCCESS;
    if (init_refs == 0) {
        struct mock_node *fresh = NULL;
        ret = node_build(&fresh);
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

nvmlReturn_t DECLDIR nvmlInit_v2(void)
{
    return init_once();
}

nvmlReturn_t DECLDIR nvmlInit(void)
{
    return init_once();
}

nvmlReturn_t DECLDIR nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;                                  /* NO_GPUS / NO_ATTACH change nothing here */
    return init_once();
}

nvmlReturn_t DECLDIR nvmlShutdown(void)
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

/* --- count and handles ------------------------------------------------------ */

nvmlReturn_t DECLDIR nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = mock_node()->nvisible;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return nvmlDeviceGetCount_v2(deviceCount);
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    if (!device || index >= n->nvisible)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mock_gpu_lost(&n->gpus[n->visible[index]]))
        return NVML_ERROR_GPU_IS_LOST;
    *device = &mock_handles[index];
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

typedef int (*gpu_match)(const struct mock_gpu *g, const void *arg);

/* The single visible GPU `match` accepts: NOT_FOUND for none, INVALID_ARGUMENT
 * for several (as NVML does for a serial shared by a multi-GPU board). */
static nvmlReturn_t find(const void *arg, gpu_match match, nvmlDevice_t *device)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!arg || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_node *n = mock_node();
    unsigned int hits = 0;
    for (unsigned int i = 0; i < n->nvisible; i++) {
        const struct mock_gpu *g = &n->gpus[n->visible[i]];
        if (match(g, arg)) {
            if (hits++ == 0)
                *device = &mock_handles[i];
        }
    }
    if (hits == 1 && mock_gpu_lost(&n->gpus[n->visible[*device - mock_handles]]))
        return NVML_ERROR_GPU_IS_LOST;
    return hits == 0 ? NVML_ERROR_NOT_FOUND : hits == 1 ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static int match_uuid(const struct mock_gpu *g, const void *arg)
{
    char v[MOCK_VALUE_MAX];
    return gpu_str(g, K_UUID, v, sizeof v) == 1 && strcasecmp(v, arg) == 0;
}

static int match_serial(const struct mock_gpu *g, const void *arg)
{
    char v[MOCK_VALUE_MAX];
    return gpu_str(g, K_SERIAL, v, sizeof v) == 1 && strcmp(v, arg) == 0;
}

struct bus_id { unsigned int domain, bus, device, function; };

static int match_bus(const struct mock_gpu *g, const void *arg)
{
    const struct bus_id *want = arg;
    char v[MOCK_VALUE_MAX];
    struct bus_id have;
    return gpu_str(g, K_PCI_BUS_ID, v, sizeof v) == 1 &&
           api_parse_bus_id(v, &have.domain, &have.bus, &have.device, &have.function) &&
           have.domain == want->domain && have.bus == want->bus && have.device == want->device &&
           have.function == want->function;
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    if (uuid && device && strncasecmp(uuid, "MIG-", 4) == 0 && mock_require_init() == NVML_SUCCESS)
        return mig_handle_by_uuid(uuid, device);
    return find(uuid, match_uuid, device);
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    return find(serial, match_serial, device);
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    struct bus_id want;
    if (!pciBusId || !api_parse_bus_id(pciBusId, &want.domain, &want.bus, &want.device, &want.function))
        return NVML_ERROR_INVALID_ARGUMENT;
    return find(&want, match_bus, device);
}

nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}
