/* ECC mode and counters, row remapping and page retirement. Counters exist
 * only while ECC is enabled (values.ecc_count); row remapping from Ampere on,
 * page retirement before Ada (report._remapped, report._retired). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mock.h"

nvmlReturn_t DECLDIR nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                          nvmlEnableState_t *pending)
{
    nvmlEnableState_t cur, pend;
    nvmlReturn_t ret = api_enabled(device, "ecc.mode_current", current && pending ? &cur : NULL);
    if (ret == NVML_SUCCESS)
        ret = api_enabled(device, "ecc.mode_pending", &pend);
    if (ret == NVML_SUCCESS) {
        *current = cur;
        *pending = pend;
    }
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceGetDefaultEccMode(nvmlDevice_t device, nvmlEnableState_t *defaultMode)
{
    return api_enabled(device, "ecc.default_mode", defaultMode);
}

int ecc_enabled(const struct mock_gpu *g)
{
    int on = 0;
    return gpu_flag(g, "ecc.mode_current", &on) && on;
}

static nvmlReturn_t ecc_count(nvmlDevice_t device, nvmlMemoryErrorType_t type, nvmlEccCounterType_t scope,
                              const char *where, unsigned long long *out)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!out || (type != NVML_MEMORY_ERROR_TYPE_CORRECTED && type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
        (scope != NVML_VOLATILE_ECC && scope != NVML_AGGREGATE_ECC))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!ecc_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    if (strcmp(where, "sram") == 0)
        return sram_count(g, type == NVML_MEMORY_ERROR_TYPE_CORRECTED, scope == NVML_AGGREGATE_ECC, out)
                   ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    char key[128];
    snprintf(key, sizeof key, "ecc.errors.%s.%s.%s", scope == NVML_VOLATILE_ECC ? "volatile" : "aggregate",
             type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "single_bit" : "double_bit", where);
    return gpu_u64(g, key, out) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DECLDIR nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                 nvmlEccCounterType_t counterType, unsigned long long *eccCounts)
{
    return ecc_count(device, errorType, counterType, "total", eccCounts);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType,
                                                     nvmlMemoryLocation_t locationType, unsigned long long *count)
{
    static const char *const where[NVML_MEMORY_LOCATION_COUNT] = {
        [NVML_MEMORY_LOCATION_L1_CACHE] = "l1_cache", [NVML_MEMORY_LOCATION_L2_CACHE] = "l2_cache",
        [NVML_MEMORY_LOCATION_DEVICE_MEMORY] = "device_memory",
        [NVML_MEMORY_LOCATION_REGISTER_FILE] = "register_file",
        [NVML_MEMORY_LOCATION_TEXTURE_MEMORY] = "texture_memory", [NVML_MEMORY_LOCATION_SRAM] = "sram"};
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((unsigned int)locationType >= NVML_MEMORY_LOCATION_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!where[locationType])
        return NVML_ERROR_NOT_SUPPORTED;
    return ecc_count(device, errorType, counterType, where[locationType], count);
}

/* --- row remapping ------------------------------------------------------------------ */

static int remaps_rows(const struct mock_gpu *g)
{
    static const char *const before[] = {"kepler", "maxwell", "pascal", "volta", "turing"};
    char arch[64] = "";
    gpu_raw(g, "architecture", arch, sizeof arch);
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++)
        if (strcasecmp(arch, before[i]) == 0)
            return 0;
    return gpu_has_prefix(g, "remapped_rows.");
}

nvmlReturn_t DECLDIR nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                               unsigned int *isPending, unsigned int *failureOccurred)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!corrRows || !uncRows || !isPending || !failureOccurred)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!remaps_rows(g))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long corr = 0, unc = 0;
    int pending = 0, failed = 0;
    gpu_u64(g, "remapped_rows.correctable", &corr);
    gpu_u64(g, "remapped_rows.uncorrectable", &unc);
    gpu_flag(g, "remapped_rows.pending", &pending);
    gpu_flag(g, "remapped_rows.failure_occurred", &failed);
    *corrRows = (unsigned int)corr;
    *uncRows = (unsigned int)unc;
    *isPending = (unsigned int)pending;
    *failureOccurred = (unsigned int)failed;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetRowRemapperHistogram(nvmlDevice_t device, nvmlRowRemapperHistogramValues_t *values)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!values)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!remaps_rows(g) || !gpu_has_prefix(g, "remapped_rows.availability_histogram."))
        return NVML_ERROR_NOT_SUPPORTED;
    static const char *const bins[] = {"max", "high", "partial", "low", "none"};
    unsigned int *out[] = {&values->max, &values->high, &values->partial, &values->low, &values->none};
    for (size_t i = 0; i < 5; i++) {
        char key[96];
        unsigned long long v = 0;
        snprintf(key, sizeof key, "remapped_rows.availability_histogram.%s", bins[i]);
        gpu_u64(g, key, &v);
        *out[i] = (unsigned int)v;
    }
    return NVML_SUCCESS;
}

/* --- page retirement (before Ada) ------------------------------------------------------ */

static nvmlReturn_t retired(nvmlDevice_t device, nvmlPageRetirementCause_t cause, unsigned int *pageCount,
                            unsigned long long *addresses, unsigned long long *timestamps)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!pageCount || (cause != NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS &&
                       cause != NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!api_pre_ada(g) || !gpu_has_prefix(g, "retired_pages."))
        return NVML_ERROR_NOT_SUPPORTED;
    const char *block = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? "double_bit_retirement"
                                                                                 : "single_bit_retirement";
    char list[96];
    snprintf(list, sizeof list, "retired_pages.%s.addresses", block);
    unsigned int n = gpu_list_len(g, list);
    if (*pageCount < n) {
        *pageCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && !addresses)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < n; i++) {
        char key[128], v[64];
        snprintf(key, sizeof key, "%s.%u", list, i);
        addresses[i] = gpu_raw(g, key, v, sizeof v) == 1 ? strtoull(v, NULL, 0) : 0;
        if (timestamps)
            timestamps[i] = 0;
    }
    *pageCount = n;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                               unsigned int *pageCount, unsigned long long *addresses)
{
    return retired(device, cause, pageCount, addresses, NULL);
}

nvmlReturn_t DECLDIR nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                  unsigned int *pageCount, unsigned long long *addresses,
                                                  unsigned long long *timestamps)
{
    return retired(device, cause, pageCount, addresses, timestamps);
}

nvmlReturn_t DECLDIR nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!isPending)
        return NVML_ERROR_INVALID_ARGUMENT;
    int pending = 0;
    if (!api_pre_ada(g) || !gpu_has_prefix(g, "retired_pages."))
        return NVML_ERROR_NOT_SUPPORTED;
    gpu_flag(g, "retired_pages.pending_retirement", &pending);
    *isPending = pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}
