/* SRAM ECC: the state's `ecc.sram` block, which nvidia-smi prints as the "SRAM …"
 * rows of -q. Answered while ECC is enabled and the state has the block (every
 * built-in profile does); a key missing inside the block reads 0.
 *
 * Ampere on splits an uncorrectable SRAM error by the protection of the unit
 * that hit it (parity or SEC-DED); nvidia-smi's "SRAM Uncorrectable" of older
 * boards is "uncorrectable errors detected in any of the SRAMs", so the single
 * uncorrected count of nvmlDeviceGetMemoryErrorCounter(SRAM) is their sum. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "api.h"

static int sram_present(const struct mock_gpu *g)
{
    return ecc_enabled(g) && gpu_has_prefix(g, K_ECC_SRAM ".");
}

/* A block that counts uncorrectable errors as one number is a board's before the
 * parity / SEC-DED split, which has no nvmlDeviceGetSramEccErrorStatus. */
static int sram_split(const struct mock_gpu *g)
{
    char v[MOCK_VALUE_MAX];
    return gpu_raw(g, K_ECC_SRAM_VOLATILE_UNCORRECTABLE, v, sizeof v) != 1 &&
           gpu_raw(g, K_ECC_SRAM_AGGREGATE_UNCORRECTABLE, v, sizeof v) != 1;
}

/* A count of the block; 0 when the state leaves it out. */
static unsigned long long sram_u64(const struct mock_gpu *g, const char *key)
{
    unsigned long long x = 0;
    gpu_u64(g, key, &x);
    return x;
}

int sram_count(const struct mock_gpu *g, int corrected, int aggregate, unsigned long long *out)
{
    if (!sram_present(g))
        return 0;
    if (corrected) {
        *out = sram_u64(g, aggregate ? K_ECC_SRAM_AGGREGATE_CORRECTABLE : K_ECC_SRAM_VOLATILE_CORRECTABLE);
        return 1;
    }
    if (!sram_split(g)) {
        *out = sram_u64(g, aggregate ? K_ECC_SRAM_AGGREGATE_UNCORRECTABLE : K_ECC_SRAM_VOLATILE_UNCORRECTABLE);
        return 1;
    }
    return !__builtin_add_overflow(
        sram_u64(g, aggregate ? K_ECC_SRAM_AGGREGATE_UNCORRECTABLE_PARITY : K_ECC_SRAM_VOLATILE_UNCORRECTABLE_PARITY),
        sram_u64(g, aggregate ? K_ECC_SRAM_AGGREGATE_UNCORRECTABLE_SECDED : K_ECC_SRAM_VOLATILE_UNCORRECTABLE_SECDED),
        out);
}

nvmlReturn_t DECLDIR nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t device, nvmlEccSramErrorStatus_t *status)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!status)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (status->version != nvmlEccSramErrorStatus_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!sram_present(g) || !sram_split(g))
        return NVML_ERROR_NOT_SUPPORTED;
    nvmlEccSramErrorStatus_v1_t s;
    memset(&s, 0, sizeof s);
    s.version = nvmlEccSramErrorStatus_v1;
    s.aggregateUncParity = sram_u64(g, K_ECC_SRAM_AGGREGATE_UNCORRECTABLE_PARITY);
    s.aggregateUncSecDed = sram_u64(g, K_ECC_SRAM_AGGREGATE_UNCORRECTABLE_SECDED);
    s.aggregateCor = sram_u64(g, K_ECC_SRAM_AGGREGATE_CORRECTABLE);
    s.volatileUncParity = sram_u64(g, K_ECC_SRAM_VOLATILE_UNCORRECTABLE_PARITY);
    s.volatileUncSecDed = sram_u64(g, K_ECC_SRAM_VOLATILE_UNCORRECTABLE_SECDED);
    s.volatileCor = sram_u64(g, K_ECC_SRAM_VOLATILE_CORRECTABLE);
    s.aggregateUncBucketL2 = sram_u64(g, K_ECC_SRAM_UNCORRECTABLE_SOURCES_L2);
    s.aggregateUncBucketSm = sram_u64(g, K_ECC_SRAM_UNCORRECTABLE_SOURCES_SM);
    s.aggregateUncBucketPcie = sram_u64(g, K_ECC_SRAM_UNCORRECTABLE_SOURCES_PCIE);
    s.aggregateUncBucketMcu = sram_u64(g, K_ECC_SRAM_UNCORRECTABLE_SOURCES_MICROCONTROLLER);
    s.aggregateUncBucketOther = sram_u64(g, K_ECC_SRAM_UNCORRECTABLE_SOURCES_OTHER);
    int exceeded = 0;
    gpu_flag(g, K_ECC_SRAM_THRESHOLD_EXCEEDED, &exceeded);
    s.bThresholdExceeded = (unsigned int)exceeded;
    *status = s;
    return NVML_SUCCESS;
}
