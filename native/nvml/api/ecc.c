/* ECC mode and counters, row remapping and page retirement. Counters exist
 * only while ECC is enabled (values.ecc_count); row remapping from Ampere on,
 * page retirement before Ada (report._remapped, report._retired). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "mig/mig.h"
#include "mokka_private.h"

nvmlReturn_t DECLDIR nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                          nvmlEnableState_t *pending)
{
    nvmlEnableState_t cur, pend;
    nvmlReturn_t ret = api_enabled(device, K_ECC_MODE_CURRENT, current && pending ? &cur : NULL);
    if (ret == NVML_SUCCESS)
        ret = api_enabled(device, K_ECC_MODE_PENDING, &pend);
    if (ret == NVML_SUCCESS) {
        *current = cur;
        *pending = pend;
    }
    return ret;
}

int ecc_enabled(const struct mock_gpu *g)
{
    int on = 0;
    return gpu_flag(g, K_ECC_MODE_CURRENT, &on) && on;
}

/* Where a count is kept: NVML's memory locations, and ECC_TOTAL, their total. */
#define ECC_TOTAL NVML_MEMORY_LOCATION_COUNT

/* The counts of one scope and error type: ecc.errors.<scope>.<bits>.<location>, the
 * SRAM's ecc.sram.<scope>.<sram>; NULL where the state keeps no count. */
#define ECC_KEYS(SCOPE, BITS, SRAM)                                                              \
    {[NVML_MEMORY_LOCATION_L1_CACHE] = K_ECC_ERRORS_##SCOPE##_##BITS##_L1_CACHE,                   \
     [NVML_MEMORY_LOCATION_L2_CACHE] = K_ECC_ERRORS_##SCOPE##_##BITS##_L2_CACHE,                   \
     [NVML_MEMORY_LOCATION_DEVICE_MEMORY] = K_ECC_ERRORS_##SCOPE##_##BITS##_DEVICE_MEMORY,         \
     [NVML_MEMORY_LOCATION_REGISTER_FILE] = K_ECC_ERRORS_##SCOPE##_##BITS##_REGISTER_FILE,         \
     [NVML_MEMORY_LOCATION_TEXTURE_MEMORY] = K_ECC_ERRORS_##SCOPE##_##BITS##_TEXTURE_MEMORY,       \
     [NVML_MEMORY_LOCATION_SRAM] = K_ECC_SRAM_##SCOPE##_##SRAM,                                    \
     [ECC_TOTAL] = K_ECC_ERRORS_##SCOPE##_##BITS##_TOTAL}

static const char *const ecc_keys[NVML_ECC_COUNTER_TYPE_COUNT][NVML_MEMORY_ERROR_TYPE_COUNT]
                                 [ECC_TOTAL + 1] = {
    [NVML_VOLATILE_ECC] = {[NVML_MEMORY_ERROR_TYPE_CORRECTED] = ECC_KEYS(VOLATILE, SINGLE_BIT, CORRECTABLE),
                           [NVML_MEMORY_ERROR_TYPE_UNCORRECTED] =
                               ECC_KEYS(VOLATILE, DOUBLE_BIT, UNCORRECTABLE_SECDED)},
    [NVML_AGGREGATE_ECC] = {[NVML_MEMORY_ERROR_TYPE_CORRECTED] = ECC_KEYS(AGGREGATE, SINGLE_BIT, CORRECTABLE),
                            [NVML_MEMORY_ERROR_TYPE_UNCORRECTED] =
                                ECC_KEYS(AGGREGATE, DOUBLE_BIT, UNCORRECTABLE_SECDED)},
};

static nvmlReturn_t ecc_count(nvmlDevice_t device, nvmlMemoryErrorType_t type, nvmlEccCounterType_t scope,
                              unsigned int where, unsigned long long *out)
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
    if (where == NVML_MEMORY_LOCATION_SRAM)
        return sram_count(g, type == NVML_MEMORY_ERROR_TYPE_CORRECTED, scope == NVML_AGGREGATE_ECC, out)
                   ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    return gpu_u64(g, ecc_keys[scope][type][where], out) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DECLDIR nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                 nvmlEccCounterType_t counterType, unsigned long long *eccCounts)
{
    return ecc_count(device, errorType, counterType, ECC_TOTAL, eccCounts);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType,
                                                     nvmlMemoryLocation_t locationType, unsigned long long *count)
{
    const struct mock_gpu *g;
    unsigned int phys, gi, ci;
    int mig = mig_handle_ids(device, &phys, &gi, &ci);
    nvmlReturn_t ret = mig_gpu_or_parent(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((unsigned int)locationType >= NVML_MEMORY_LOCATION_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig) {                                    /* a MIG device counts none of its parent's errors */
        if (!ecc_enabled(g))
            return NVML_ERROR_NOT_SUPPORTED;
        if (!count)
            return NVML_ERROR_INVALID_ARGUMENT;
        *count = 0;
        return NVML_SUCCESS;
    }
    if (!ecc_keys[NVML_VOLATILE_ECC][NVML_MEMORY_ERROR_TYPE_CORRECTED][locationType])
        return NVML_ERROR_NOT_SUPPORTED;          /* a location the state keeps no count of */
    return ecc_count(device, errorType, counterType, locationType, count);
}

/* --- row remapping ------------------------------------------------------------------ */

/* Before Ampere a board retires pages; from Ampere on it remaps rows instead, and its
 * page retirement calls answer NOT_SUPPORTED (a real A100's nvidia-smi -q: N/A). */
static int before_ampere(const struct mock_gpu *g)
{
    return api_arch_before(g, "ampere") == 1;
}

static int remaps_rows(const struct mock_gpu *g)
{
    return !before_ampere(g) && gpu_has_prefix(g, K_REMAPPED_ROWS ".");
}

static int retires_pages(const struct mock_gpu *g)
{
    return before_ampere(g) && gpu_has_prefix(g, K_RETIRED_PAGES ".");
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
    gpu_u64(g, K_REMAPPED_ROWS_CORRECTABLE, &corr);
    gpu_u64(g, K_REMAPPED_ROWS_UNCORRECTABLE, &unc);
    gpu_flag(g, K_REMAPPED_ROWS_PENDING, &pending);
    gpu_flag(g, K_REMAPPED_ROWS_FAILURE_OCCURRED, &failed);
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
    if (!remaps_rows(g) || !gpu_has_prefix(g, K_REMAPPED_ROWS_AVAILABILITY_HISTOGRAM "."))
        return NVML_ERROR_NOT_SUPPORTED;
    static const char *const bins[] = {
        K_REMAPPED_ROWS_AVAILABILITY_HISTOGRAM_MAX, K_REMAPPED_ROWS_AVAILABILITY_HISTOGRAM_HIGH,
        K_REMAPPED_ROWS_AVAILABILITY_HISTOGRAM_PARTIAL, K_REMAPPED_ROWS_AVAILABILITY_HISTOGRAM_LOW,
        K_REMAPPED_ROWS_AVAILABILITY_HISTOGRAM_NONE};
    unsigned int *out[] = {&values->max, &values->high, &values->partial, &values->low, &values->none};
    for (size_t i = 0; i < 5; i++) {
        unsigned long long v = 0;
        gpu_u64(g, bins[i], &v);
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
    if (!retires_pages(g))
        return NVML_ERROR_NOT_SUPPORTED;
    int double_bit = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR;
    unsigned int n = gpu_list_len(g, double_bit ? K_RETIRED_PAGES_DOUBLE_BIT_RETIREMENT_ADDRESSES
                                                : K_RETIRED_PAGES_SINGLE_BIT_RETIREMENT_ADDRESSES);
    if (*pageCount < n) {
        *pageCount = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && !addresses)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < n; i++) {
        char key[128], v[64];
        snprintf(key, sizeof key, double_bit ? K_RETIRED_PAGES_DOUBLE_BIT_RETIREMENT_ADDRESSES_N
                                             : K_RETIRED_PAGES_SINGLE_BIT_RETIREMENT_ADDRESSES_N, i);
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
    if (!retires_pages(g))
        return NVML_ERROR_NOT_SUPPORTED;
    gpu_flag(g, K_RETIRED_PAGES_PENDING_RETIREMENT, &pending);
    *isPending = pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

/* Clearing the counts: NVML's permission rule first (root only). The counts a node reports
 * beyond its profile's are `mokka ctl ecc`'s, held in the runtime overrides, whose one
 * writer is ctl: the library keeps the counts as they are at the clearing in settings.nvml
 * instead (../engine/settings.c), and every reader subtracts them, so the counts of the
 * scope read zero from now on and grow from there. */
nvmlReturn_t DECLDIR nvmlDeviceClearEccErrorCounts(nvmlDevice_t device, nvmlEccCounterType_t counterType)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (counterType != NVML_VOLATILE_ECC && counterType != NVML_AGGREGATE_ECC)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!ecc_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    if (geteuid() != 0)
        return NVML_ERROR_NO_PERMISSION;
    return settings_clear_ecc(g->node, g->phys, (int)counterType);
}

void nvmlMokkaReadWholeErrorCounts(unsigned int whole)
{
    settings_whole_counts(whole != 0);
}
