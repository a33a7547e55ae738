/* nvmlDeviceGetSamples: the driver's buffer of recent readings. The buffer holds one sample
 * a second for the last SAMPLE_SECONDS seconds, the one of the current second last, each
 * the reading the layers give at that second (engine/dynamic.c's pure function of time for
 * the moving ones), so a sample agrees with what nvmlDeviceGetPowerUsage or
 * nvmlDeviceGetUtilizationRates answered in its second. Timestamps are the seconds' starts
 * in microseconds. */
#define _GNU_SOURCE
#include "api.h"
#include "mig/mig.h"

#define SAMPLE_SECONDS 60u
#define US_PER_SECOND 1000000ull

/* The key each sampling type reads, and whether it is one NVML refuses on a MIG-enabled GPU. */
static const struct {
    const char *key;
    int not_with_mig;
} SAMPLED[] = {
    [NVML_TOTAL_POWER_SAMPLES] = {K_POWER_CURRENT_DRAW_MW, 0},
    [NVML_GPU_UTILIZATION_SAMPLES] = {K_UTILIZATION_GPU, 1},
    [NVML_MEMORY_UTILIZATION_SAMPLES] = {K_UTILIZATION_MEMORY, 1},
    [NVML_ENC_UTILIZATION_SAMPLES] = {K_UTILIZATION_ENCODER, 1},
    [NVML_DEC_UTILIZATION_SAMPLES] = {K_UTILIZATION_DECODER, 1},
    [NVML_PROCESSOR_CLK_SAMPLES] = {K_CLOCKS_GRAPHICS_CURRENT, 0},
    [NVML_MEMORY_CLK_SAMPLES] = {K_CLOCKS_MEMORY_CURRENT, 0},
    [NVML_MODULE_POWER_SAMPLES] = {K_POWER_MODULE_INSTANT_DRAW_MW, 0},
    [NVML_JPG_UTILIZATION_SAMPLES] = {K_UTILIZATION_JPEG, 0},
    [NVML_OFA_UTILIZATION_SAMPLES] = {K_UTILIZATION_OFA, 0},
};

nvmlReturn_t DECLDIR nvmlDeviceGetSamples(nvmlDevice_t device, nvmlSamplingType_t type,
                                          unsigned long long lastSeenTimeStamp, nvmlValueType_t *sampleValType,
                                          unsigned int *sampleCount, nvmlSample_t *samples)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!sampleCount || !sampleValType || (samples && *sampleCount == 0) ||
        (unsigned int)type >= sizeof SAMPLED / sizeof SAMPLED[0])
        return NVML_ERROR_INVALID_ARGUMENT;
    if (SAMPLED[type].not_with_mig && mig_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long now = dynamic_clock(g->node), value;
    if (!gpu_u64_at(g, SAMPLED[type].key, now, &value))
        return NVML_ERROR_NOT_SUPPORTED;
    /* The window's first second, and the first after the caller's last seen one. */
    unsigned long long first = now >= SAMPLE_SECONDS - 1 ? now - (SAMPLE_SECONDS - 1) : 0;
    unsigned long long seen = lastSeenTimeStamp / US_PER_SECOND;
    if (lastSeenTimeStamp > 0 && seen + 1 > first)
        first = seen + 1;
    if (first > now)
        return NVML_ERROR_NOT_FOUND;
    unsigned long long available = now - first + 1;
    *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
    if (!samples) {
        *sampleCount = (unsigned int)available;
        return NVML_SUCCESS;
    }
    unsigned int n = available < *sampleCount ? (unsigned int)available : *sampleCount;
    for (unsigned int i = 0; i < n; i++) {
        unsigned long long t = first + i;
        if (!gpu_u64_at(g, SAMPLED[type].key, t, &value))
            value = 0;
        samples[i].timeStamp = t * US_PER_SECOND;
        samples[i].sampleValue.uiVal = value > 0xFFFFFFFFull ? 0xFFFFFFFFu : (unsigned int)value;
    }
    *sampleCount = n;
    return NVML_SUCCESS;
}
