/* What the board allows a setter (settings.h): its power limits, its supported clocks,
 * whether it has an ECC mode. Read through the layers (an override of a limit counts)
 * but the settings' own: none of these keys is a setting, so the checks settings.c makes
 * while it loads the file never come back to it. */
#define _GNU_SOURCE
#include <stdio.h>

#include "engine.h"

int settings_power_allowed(const struct mock_gpu *g, unsigned int mw)
{
    unsigned long long lo, hi;
    return gpu_u64(g, K_POWER_MIN_LIMIT_MW, &lo) && gpu_u64(g, K_POWER_MAX_LIMIT_MW, &hi) && mw >= lo && mw <= hi;
}

int settings_clocks_supported(const struct mock_gpu *g, unsigned int mem, unsigned int gfx)
{
    unsigned int n = gpu_list_len(g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS);
    for (unsigned int m = 0; m < n; m++) {
        char key[128];
        unsigned long long v;
        snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_FREQ_MHZ, m);
        if (!gpu_u64(g, key, &v) || v != mem)
            continue;
        snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS, m);
        unsigned int k = gpu_list_len(g, key);
        for (unsigned int i = 0; i < k; i++) {
            snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS_N, m, i);
            if (gpu_u64(g, key, &v) && v == gfx)
                return 1;
        }
    }
    return 0;
}

int settings_graphics_range(const struct mock_gpu *g, unsigned int *lo, unsigned int *hi)
{
    unsigned long long v, low = ~0ULL, high = 0;
    unsigned int n = gpu_list_len(g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS);
    for (unsigned int m = 0; m < n; m++) {
        char key[128];
        snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS, m);
        unsigned int k = gpu_list_len(g, key);
        for (unsigned int i = 0; i < k; i++) {
            snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_GRAPHICS_CLOCKS_N, m, i);
            if (gpu_u64(g, key, &v) && v > 0 && v <= SETTINGS_MHZ_MAX) {
                low = v < low ? v : low;
                high = v > high ? v : high;
            }
        }
    }
    if (gpu_u64(g, K_CLOCKS_GRAPHICS_MAX, &v) && v > 0 && v <= SETTINGS_MHZ_MAX) {
        high = v > high ? v : high;
        low = low == ~0ULL ? v : low;
    }
    if (high == 0)
        return 0;
    *lo = (unsigned int)low;
    *hi = (unsigned int)high;
    return 1;
}

int settings_memory_range(const struct mock_gpu *g, unsigned int *lo, unsigned int *hi)
{
    unsigned long long v, low = ~0ULL, high = 0;
    unsigned int n = gpu_list_len(g, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS);
    for (unsigned int m = 0; m < n; m++) {
        char key[128];
        snprintf(key, sizeof key, K_SUPPORTED_CLOCKS_MEMORY_CLOCKS_N_FREQ_MHZ, m);
        if (gpu_u64(g, key, &v) && v > 0 && v <= SETTINGS_MHZ_MAX) {
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
    }
    if (high == 0)
        return 0;
    *lo = (unsigned int)low;
    *hi = (unsigned int)high;
    return 1;
}

int settings_ecc_supported(const struct mock_gpu *g)
{
    char key[64];                                 /* the state's: the ECC mode itself is a setting */
    snprintf(key, sizeof key, "%s%s", g->base, K_ECC_MODE_CURRENT);
    const char *v = flat_get(&g->node->state, key);
    return v && !mock_is_na(v);
}

