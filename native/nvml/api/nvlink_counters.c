/* NVLink error counters. The state keeps no NVLink errors, so every counter of a link the
 * GPU has reads 0, as on a healthy board; resetting them leaves them at 0.
 *
 * The utilization counters (Get/SetNvLinkUtilizationControl, Get/Reset/Freeze
 * NvLinkUtilizationCounter) stay unsupported: nvml.h deprecates them for the
 * NVML_FI_DEV_NVLINK_THROUGHPUT_* field values, and the drivers of Ampere and later boards
 * answer them NOT_SUPPORTED. */
#define _GNU_SOURCE
#include "api.h"

static nvmlReturn_t link_of(nvmlDevice_t device, unsigned int link)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (nvlink_count(g) == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned int active;
    return nvlink_state(g, link, &active) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                     nvmlNvLinkErrorCounter_t counter, unsigned long long *counterValue)
{
    nvmlReturn_t ret = link_of(device, link);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!counterValue || (unsigned int)counter >= NVML_NVLINK_ERROR_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    *counterValue = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceResetNvLinkErrorCounters(nvmlDevice_t device, unsigned int link)
{
    return link_of(device, link);
}
