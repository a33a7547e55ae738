/* Clocks: current, maximum, application and default per domain, and the
 * supported memory/graphics pairs. */
#define _GNU_SOURCE
#include <stdio.h>

#include "mock.h"

/* The state's name of a clock domain, or NULL. */
static const char *domain_name(nvmlClockType_t type)
{
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
        return "graphics";
    case NVML_CLOCK_SM:
        return "sm";
    case NVML_CLOCK_MEM:
        return "memory";
    case NVML_CLOCK_VIDEO:
        return "video";
    default:
        return NULL;
    }
}

/* clocks.<domain>_<what>: current, max, app, app_default. */
static nvmlReturn_t clock_value(nvmlDevice_t device, nvmlClockType_t type, const char *what, unsigned int *mhz)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    const char *domain = domain_name(type);
    if (!domain)
        return NVML_ERROR_INVALID_ARGUMENT;
    char key[64];
    snprintf(key, sizeof key, "clocks.%s_%s", domain, what);
    return api_u32(device, key, mhz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    return clock_value(device, type, "current", clock);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    return clock_value(device, type, "max", clock);
}

nvmlReturn_t DECLDIR nvmlDeviceGetApplicationsClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                                    unsigned int *clockMHz)
{
    return clock_value(device, clockType, "app", clockMHz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                                           unsigned int *clockMHz)
{
    return clock_value(device, clockType, "app_default", clockMHz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t clockType, nvmlClockId_t clockId,
                                        unsigned int *clockMHz)
{
    switch (clockId) {
    case NVML_CLOCK_ID_CURRENT:
        return clock_value(device, clockType, "current", clockMHz);
    case NVML_CLOCK_ID_APP_CLOCK_TARGET:
        return clock_value(device, clockType, "app", clockMHz);
    case NVML_CLOCK_ID_APP_CLOCK_DEFAULT:
        return clock_value(device, clockType, "app_default", clockMHz);
    case NVML_CLOCK_ID_CUSTOMER_BOOST_MAX: {       /* nvidia-smi prints N/A */
        nvmlReturn_t ret = mock_check_device(device);
        return ret != NVML_SUCCESS ? ret : NVML_ERROR_NOT_SUPPORTED;
    }
    default: {
        nvmlReturn_t ret = mock_check_device(device);
        return ret != NVML_SUCCESS ? ret : NVML_ERROR_INVALID_ARGUMENT;
    }
    }
}

/* Copy up to *count values; NVML's contract for sized arrays. */
static nvmlReturn_t fill(const struct mock_gpu *g, const char *list, const char *suffix, unsigned int n,
                         unsigned int *count, unsigned int *out)
{
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < n; i++) {
        char key[128];
        unsigned long long v = 0;
        snprintf(key, sizeof key, "%s.%u%s", list, i, suffix);
        gpu_u64(g, key, &v);
        out[i] = (unsigned int)v;
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int *count,
                                                        unsigned int *clocksMHz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = gpu_list_len(g, "supported_clocks.memory_clocks");
    if (n == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    return fill(g, "supported_clocks.memory_clocks", ".freq_mhz", n, count, clocksMHz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t device, unsigned int memoryClockMHz,
                                                          unsigned int *count, unsigned int *clocksMHz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = gpu_list_len(g, "supported_clocks.memory_clocks");
    if (n == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    for (unsigned int m = 0; m < n; m++) {
        char key[128];
        unsigned long long freq;
        snprintf(key, sizeof key, "supported_clocks.memory_clocks.%u.freq_mhz", m);
        if (!gpu_u64(g, key, &freq) || freq != memoryClockMHz)
            continue;
        snprintf(key, sizeof key, "supported_clocks.memory_clocks.%u.graphics_clocks", m);
        return fill(g, key, "", gpu_list_len(g, key), count, clocksMHz);
    }
    return NVML_ERROR_NOT_FOUND;
}
