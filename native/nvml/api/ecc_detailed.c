/* nvmlDeviceGetDetailedEccErrors: the older, fixed set of ECC locations, each as
 * nvmlDeviceGetMemoryErrorCounter counts it. nvml.h: a location the board does not count
 * reads zero, and the counts exist only while ECC is enabled. */
#define _GNU_SOURCE
#include <string.h>

#include "api.h"

nvmlReturn_t DECLDIR nvmlDeviceGetDetailedEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                    nvmlEccCounterType_t counterType, nvmlEccErrorCounts_t *eccCounts)
{
    unsigned long long total;
    nvmlReturn_t ret = nvmlDeviceGetTotalEccErrors(device, errorType, counterType, eccCounts ? &total : NULL);
    if (ret != NVML_SUCCESS)
        return ret;
    static const nvmlMemoryLocation_t where[] = {NVML_MEMORY_LOCATION_L1_CACHE, NVML_MEMORY_LOCATION_L2_CACHE,
                                                 NVML_MEMORY_LOCATION_DEVICE_MEMORY,
                                                 NVML_MEMORY_LOCATION_REGISTER_FILE};
    unsigned long long counts[sizeof where / sizeof where[0]];
    for (unsigned int i = 0; i < sizeof where / sizeof where[0]; i++) {
        ret = nvmlDeviceGetMemoryErrorCounter(device, errorType, counterType, where[i], &counts[i]);
        if (ret == NVML_ERROR_NOT_SUPPORTED)
            counts[i] = 0;
        else if (ret != NVML_SUCCESS)
            return ret;
    }
    memset(eccCounts, 0, sizeof *eccCounts);
    eccCounts->l1Cache = counts[0];
    eccCounts->l2Cache = counts[1];
    eccCounts->deviceMemory = counts[2];
    eccCounts->registerFile = counts[3];
    return NVML_SUCCESS;
}
