/* NVLink error counters: each link's nvlink_errors.<link> (a profile's, or what
 * `mokka ctl nvlink` raised); 0 for a counter nothing raised, as on a healthy board.
 * A GPU reset clears them (they live in the GPU's own overrides). Resetting a link's
 * counters through NVML (nvmlDeviceResetNvLinkErrorCounters) cannot touch the overrides,
 * whose one writer is ctl: the library keeps the counters as they are at the reset in the
 * node's settings instead (../engine/settings.c), and every reader here subtracts them, so
 * they read 0 in every process from then on and count on from there. nvml.h asks no
 * permission for it, so any caller may.
 *
 * The utilization counters (Get/SetNvLinkUtilizationControl, Get/Reset/Freeze
 * NvLinkUtilizationCounter) stay unsupported: nvml.h deprecates them for the
 * NVML_FI_DEV_NVLINK_THROUGHPUT_* field values, and the drivers of Ampere and later boards
 * answer them NOT_SUPPORTED. */
#define _GNU_SOURCE
#include <stdio.h>

#include "api.h"

static nvmlReturn_t link_of(nvmlDevice_t device, unsigned int link, const struct mock_gpu **g)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (nvlink_count(*g) == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned int active;
    return nvlink_state(*g, link, &active) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

int nvlink_error_count(const struct mock_gpu *g, unsigned int link, unsigned int counter, unsigned long long *out)
{
    static const char *const keys[NVML_NVLINK_ERROR_COUNT] = {
        [NVML_NVLINK_ERROR_DL_REPLAY] = K_NVLINK_ERRORS_N_REPLAY,
        [NVML_NVLINK_ERROR_DL_RECOVERY] = K_NVLINK_ERRORS_N_RECOVERY,
        [NVML_NVLINK_ERROR_DL_CRC_FLIT] = K_NVLINK_ERRORS_N_CRC_FLIT,
        [NVML_NVLINK_ERROR_DL_CRC_DATA] = K_NVLINK_ERRORS_N_CRC_DATA,
        [NVML_NVLINK_ERROR_DL_ECC_DATA] = K_NVLINK_ERRORS_N_ECC_DATA};
    unsigned int active;
    if (counter >= NVML_NVLINK_ERROR_COUNT || !nvlink_state(g, link, &active))
        return 0;
    char key[96];
    *out = 0;
    if (link < gpu_list_len(g, K_NVLINK_ERRORS)) {
        snprintf(key, sizeof key, keys[counter], link);
        gpu_u64(g, key, out);
    }
    *out = settings_nvlink_error(g, link, counter, *out);
    return 1;
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                     nvmlNvLinkErrorCounter_t counter, unsigned long long *counterValue)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = link_of(device, link, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!counterValue || (unsigned int)counter >= NVML_NVLINK_ERROR_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvlink_error_count(g, link, (unsigned int)counter, counterValue);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceResetNvLinkErrorCounters(nvmlDevice_t device, unsigned int link)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = link_of(device, link, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    unsigned long long whole[NVML_NVLINK_ERROR_COUNT];
    settings_whole_counts(1);
    for (unsigned int c = 0; c < NVML_NVLINK_ERROR_COUNT; c++)
        nvlink_error_count(g, link, c, &whole[c]);
    settings_whole_counts(0);
    return settings_reset_nvlink(g->node, g->phys, link, whole);
}
