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

#include "mock.h"

static int sram_present(const struct mock_gpu *g)
{
    return ecc_enabled(g) && gpu_has_prefix(g, "ecc.sram.");
}

/* ecc.sram.<group>.<name>: a scope's count or an uncorrectable source's. */
static unsigned long long sram_u64(const struct mock_gpu *g, const char *group, const char *name)
{
    char key[96];
    unsigned long long x = 0;
    snprintf(key, sizeof key, "ecc.sram.%s.%s", group, name);
    gpu_u64(g, key, &x);
    return x;
}

int sram_count(const struct mock_gpu *g, int corrected, int aggregate, unsigned long long *out)
{
    const char *scope = aggregate ? "aggregate" : "volatile";
    if (!sram_present(g))
        return 0;
    if (corrected) {
        *out = sram_u64(g, scope, "correctable");
        return 1;
    }
    return !__builtin_add_overflow(sram_u64(g, scope, "uncorrectable_parity"),
                                   sram_u64(g, scope, "uncorrectable_secded"), out);
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
    if (!sram_present(g))
        return NVML_ERROR_NOT_SUPPORTED;
    nvmlEccSramErrorStatus_v1_t s;
    memset(&s, 0, sizeof s);
    s.version = nvmlEccSramErrorStatus_v1;
    s.aggregateUncParity = sram_u64(g, "aggregate", "uncorrectable_parity");
    s.aggregateUncSecDed = sram_u64(g, "aggregate", "uncorrectable_secded");
    s.aggregateCor = sram_u64(g, "aggregate", "correctable");
    s.volatileUncParity = sram_u64(g, "volatile", "uncorrectable_parity");
    s.volatileUncSecDed = sram_u64(g, "volatile", "uncorrectable_secded");
    s.volatileCor = sram_u64(g, "volatile", "correctable");
    s.aggregateUncBucketL2 = sram_u64(g, "uncorrectable_sources", "l2");
    s.aggregateUncBucketSm = sram_u64(g, "uncorrectable_sources", "sm");
    s.aggregateUncBucketPcie = sram_u64(g, "uncorrectable_sources", "pcie");
    s.aggregateUncBucketMcu = sram_u64(g, "uncorrectable_sources", "microcontroller");
    s.aggregateUncBucketOther = sram_u64(g, "uncorrectable_sources", "other");
    int exceeded = 0;
    gpu_flag(g, "ecc.sram.threshold_exceeded", &exceeded);
    s.bThresholdExceeded = (unsigned int)exceeded;
    *status = s;
    return NVML_SUCCESS;
}
