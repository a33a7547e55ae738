/* nvmlInit / nvmlShutdown and how to find a handle.
 *
 * The reference count, the published node and its handles are the engine's
 * (../engine/handles.c); nvmlInit hands it MIG's hooks (../mig/mig.h), so the
 * engine never calls MIG by name.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "mig/mig.h"

nvmlReturn_t DECLDIR nvmlInit_v2(void)
{
    return mock_init(&mig_hooks);
}

nvmlReturn_t DECLDIR nvmlInit(void)
{
    return mock_init(&mig_hooks);
}

nvmlReturn_t DECLDIR nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;                                  /* NO_GPUS / NO_ATTACH change nothing here */
    return mock_init(&mig_hooks);
}

nvmlReturn_t DECLDIR nvmlShutdown(void)
{
    return mock_shutdown();
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
