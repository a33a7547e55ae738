/* Performance states: which the board has, their clock ranges, and the busy time of the
 * domains that move it between them. A data-center board holds P0 (the captures of A100,
 * GB200 and T4 boards all report it, idle or not), so the supported list is the state's
 * performance state alone, and P0's ranges are the board's supported clocks. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "mig/mig.h"

nvmlReturn_t DECLDIR nvmlDeviceGetSupportedPerformanceStates(nvmlDevice_t device, nvmlPstates_t *pstates,
                                                             unsigned int size)
{
    nvmlPstates_t current;
    nvmlReturn_t ret = nvmlDeviceGetPerformanceState(device, &current);
    if (ret == NVML_ERROR_INVALID_ARGUMENT)
        return ret;
    if (!pstates)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ret != NVML_SUCCESS)
        return ret;
    unsigned int n = size / sizeof *pstates;
    if (n == 0)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    pstates[0] = current;
    for (unsigned int i = 1; i < n; i++)
        pstates[i] = NVML_PSTATE_UNKNOWN;
    return NVML_SUCCESS;
}

/* The lowest and highest clock of a list of the state (a list of numbers, or of
 * memory clocks' graphics lists when `nested`): 1, or 0 when it lists none. */
static int list_range(const struct mock_gpu *g, const char *list_key, const char *item_fmt, int nested,
                      unsigned long long *lo, unsigned long long *hi)
{
    int found = 0;
    unsigned int n = gpu_list_len(g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS);
    for (unsigned int m = 0; m < n; m++) {
        char key[128];
        unsigned int k = 1;
        if (nested) {
            snprintf(key, sizeof key, list_key, m);
            k = gpu_list_len(g, key);
        }
        for (unsigned int i = 0; i < k; i++) {
            unsigned long long v;
            snprintf(key, sizeof key, item_fmt, m, i);
            if (!gpu_u64(g, key, &v))
                continue;
            if (!found || v < *lo)
                *lo = v;
            if (!found || v > *hi)
                *hi = v;
            found = 1;
        }
    }
    return found;
}

/* A domain's range in the board's performance state: from its lowest supported clock to its
 * maximum. The state holds no range of the video clock, so that domain has none. */
nvmlReturn_t DECLDIR nvmlDeviceGetMinMaxClockOfPState(nvmlDevice_t device, nvmlClockType_t type,
                                                      nvmlPstates_t pstate, unsigned int *minClockMHz,
                                                      unsigned int *maxClockMHz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((!minClockMHz && !maxClockMHz) || (unsigned int)type >= NVML_CLOCK_COUNT ||
        (unsigned int)pstate > NVML_PSTATE_15)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlPstates_t current;
    if ((ret = nvmlDeviceGetPerformanceState(device, &current)) != NVML_SUCCESS)
        return ret;
    if (pstate != current)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long lo = 0, hi = 0, max;
    int found;
    const char *max_key;
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
        found = list_range(g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS,
                           K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS_N, 1, &lo, &hi);
        max_key = type == NVML_CLOCK_SM ? K_CLOCKS_SM_MAX : K_CLOCKS_GRAPHICS_MAX;
        break;
    case NVML_CLOCK_MEM:
        found = list_range(g, NULL, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_FREQ_MHZ, 0, &lo, &hi);
        max_key = K_CLOCKS_MEMORY_MAX;
        break;
    default:
        return NVML_ERROR_NOT_SUPPORTED;
    }
    if (!found)
        return NVML_ERROR_NOT_SUPPORTED;
    if (gpu_u64(g, max_key, &max) && max >= lo)
        hi = max;
    if (minClockMHz)
        *minClockMHz = (unsigned int)lo;
    if (maxClockMHz)
        *maxClockMHz = (unsigned int)hi;
    return NVML_SUCCESS;
}

/* The busy time of the last second per domain, as the utilization readings give it (moving
 * ones included): graphics, frame buffer, video (the busier of encoder and decoder), and
 * the bus, which the state does not track and reads idle. nvml.h leaves thresholds to the
 * driver; a board that stays in P0 crosses none, so they read 0. Not on a MIG-enabled GPU,
 * as its utilization. */
nvmlReturn_t DECLDIR nvmlDeviceGetDynamicPstatesInfo(nvmlDevice_t device,
                                                     nvmlGpuDynamicPstatesInfo_t *pDynamicPstatesInfo)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!pDynamicPstatesInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long gpu, mem, enc = 0, dec = 0;
    if (!gpu_u64(g, K_UTILIZATION_GPU, &gpu) || !gpu_u64(g, K_UTILIZATION_MEMORY, &mem))
        return NVML_ERROR_NOT_SUPPORTED;
    gpu_u64(g, K_UTILIZATION_ENCODER, &enc);
    gpu_u64(g, K_UTILIZATION_DECODER, &dec);
    memset(pDynamicPstatesInfo, 0, sizeof *pDynamicPstatesInfo);
    const unsigned long long busy[] = {
        [NVML_GPU_UTILIZATION_DOMAIN_GPU] = gpu, [NVML_GPU_UTILIZATION_DOMAIN_FB] = mem,
        [NVML_GPU_UTILIZATION_DOMAIN_VID] = enc > dec ? enc : dec, [NVML_GPU_UTILIZATION_DOMAIN_BUS] = 0};
    for (unsigned int i = 0; i < sizeof busy / sizeof busy[0]; i++) {
        pDynamicPstatesInfo->utilization[i].bIsPresent = 1;
        pDynamicPstatesInfo->utilization[i].percentage = (unsigned int)(busy[i] > 100 ? 100 : busy[i]);
    }
    return NVML_SUCCESS;
}
