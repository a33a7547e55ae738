/* Clocks: current, maximum, application and default per domain, and the
 * supported memory/graphics pairs. */
#define _GNU_SOURCE
#include <stdio.h>

#include "api.h"

enum { CURRENT, MAX, APP, APP_DEFAULT, WHATS };

/* The key of one clock of a domain (clocks.<domain>_<what>), or NULL: not a domain. */
static const char *clock_key(nvmlClockType_t type, int what)
{
    static const char *const keys[NVML_CLOCK_COUNT][WHATS] = {
        [NVML_CLOCK_GRAPHICS] = {K_CLOCKS_GRAPHICS_CURRENT, K_CLOCKS_GRAPHICS_MAX, K_CLOCKS_GRAPHICS_APP,
                                 K_CLOCKS_GRAPHICS_APP_DEFAULT},
        [NVML_CLOCK_SM] = {K_CLOCKS_SM_CURRENT, K_CLOCKS_SM_MAX, K_CLOCKS_SM_APP, K_CLOCKS_SM_APP_DEFAULT},
        [NVML_CLOCK_MEM] = {K_CLOCKS_MEMORY_CURRENT, K_CLOCKS_MEMORY_MAX, K_CLOCKS_MEMORY_APP,
                            K_CLOCKS_MEMORY_APP_DEFAULT},
        [NVML_CLOCK_VIDEO] = {K_CLOCKS_VIDEO_CURRENT, K_CLOCKS_VIDEO_MAX, K_CLOCKS_VIDEO_APP,
                              K_CLOCKS_VIDEO_APP_DEFAULT},
    };
    return (unsigned int)type < NVML_CLOCK_COUNT ? keys[type][what] : NULL;
}

static nvmlReturn_t clock_value(nvmlDevice_t device, nvmlClockType_t type, int what, unsigned int *mhz)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    const char *key = clock_key(type, what);
    if (!key)
        return NVML_ERROR_INVALID_ARGUMENT;
    return api_u32(device, key, mhz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    return clock_value(device, type, CURRENT, clock);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    return clock_value(device, type, MAX, clock);
}

/* An application clock, unless the board's NVML refuses them (later drivers deprecate them). */
static nvmlReturn_t app_clock(nvmlDevice_t device, nvmlClockType_t type, int what, unsigned int *mhz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret == NVML_SUCCESS)
        ret = api_refusal(g, K_REFUSED_APPLICATIONS_CLOCKS);
    return ret != NVML_SUCCESS ? ret : clock_value(device, type, what, mhz);
}

/* The graphics clock's customer boost maximum; no other domain has one. */
static nvmlReturn_t customer_boost(nvmlDevice_t device, nvmlClockType_t type, unsigned int *mhz)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((unsigned int)type >= NVML_CLOCK_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    return type == NVML_CLOCK_GRAPHICS ? api_u32(device, K_CLOCKS_GRAPHICS_CUSTOMER_BOOST, mhz)
                                       : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DECLDIR nvmlDeviceGetApplicationsClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                                    unsigned int *clockMHz)
{
    return app_clock(device, clockType, APP, clockMHz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                                           unsigned int *clockMHz)
{
    return app_clock(device, clockType, APP_DEFAULT, clockMHz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMaxCustomerBoostClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                                        unsigned int *clockMHz)
{
    return customer_boost(device, clockType, clockMHz);
}

nvmlReturn_t DECLDIR nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t clockType, nvmlClockId_t clockId,
                                        unsigned int *clockMHz)
{
    switch (clockId) {
    case NVML_CLOCK_ID_CURRENT:
        return clock_value(device, clockType, CURRENT, clockMHz);
    case NVML_CLOCK_ID_APP_CLOCK_TARGET:
        return app_clock(device, clockType, APP, clockMHz);
    case NVML_CLOCK_ID_APP_CLOCK_DEFAULT:
        return app_clock(device, clockType, APP_DEFAULT, clockMHz);
    case NVML_CLOCK_ID_CUSTOMER_BOOST_MAX:
        return customer_boost(device, clockType, clockMHz);
    default: {
        nvmlReturn_t ret = mock_check_device(device);
        return ret != NVML_SUCCESS ? ret : NVML_ERROR_INVALID_ARGUMENT;
    }
    }
}

/* NVML's contract for sized arrays: *count too small, INSUFFICIENT_SIZE and the count needed. */
static nvmlReturn_t room_for(unsigned int n, unsigned int *count, const unsigned int *out)
{
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = n;
    return NVML_SUCCESS;
}

static unsigned int mhz_at(const struct mock_gpu *g, const char *key)
{
    unsigned long long v = 0;
    gpu_u64(g, key, &v);
    return (unsigned int)v;
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
    unsigned int n = gpu_list_len(g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS);
    if (n == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    ret = room_for(n, count, clocksMHz);
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < n; i++) {
        char key[128];
        snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_FREQ_MHZ, i);
        clocksMHz[i] = mhz_at(g, key);
    }
    return ret;
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
    unsigned int n = gpu_list_len(g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS);
    if (n == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    for (unsigned int m = 0; m < n; m++) {
        char key[128];
        unsigned long long freq;
        snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_FREQ_MHZ, m);
        if (!gpu_u64(g, key, &freq) || freq != memoryClockMHz)
            continue;
        snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS, m);
        unsigned int k = gpu_list_len(g, key);
        ret = room_for(k, count, clocksMHz);
        for (unsigned int i = 0; ret == NVML_SUCCESS && i < k; i++) {
            snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS_N, m, i);
            clocksMHz[i] = mhz_at(g, key);
        }
        return ret;
    }
    return NVML_ERROR_NOT_FOUND;
}
