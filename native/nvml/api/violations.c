/* How long a reason held the clocks back: the state's
 * `clocks_throttle_reasons.counters.<reason>_us`, which nvidia-smi -q prints as
 * "Clocks Event Reasons Counters" (microseconds) and NVML gives in nanoseconds.
 *
 * Two of the reasons are NVML's older perf-policy counters under a new name: the
 * field ids of SW power capping and sync boost (74, 76) are those of
 * PERF_POLICY_POWER and PERF_POLICY_SYNC_BOOST, the counters
 * nvmlDeviceGetViolationStatus reports for those policies, so both calls answer
 * the same numbers. The other policies have no counter in the state. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/time.h>

#include "api.h"

int clocks_event_ns(const struct mock_gpu *g, const char *counter_key, unsigned long long *ns)
{
    unsigned long long us;
    return gpu_u64(g, counter_key, &us) && !__builtin_mul_overflow(us, 1000ULL, ns);
}

nvmlReturn_t DECLDIR nvmlDeviceGetViolationStatus(nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType,
                                                  nvmlViolationTime_t *violTime)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    unsigned int policy = (unsigned int)perfPolicyType;
    if (!violTime || (policy > NVML_PERF_POLICY_RELIABILITY && policy != NVML_PERF_POLICY_TOTAL_APP_CLOCKS &&
                      policy != NVML_PERF_POLICY_TOTAL_BASE_CLOCKS))
        return NVML_ERROR_INVALID_ARGUMENT;
    const char *reason = policy == NVML_PERF_POLICY_POWER        ? K_CLOCKS_THROTTLE_REASONS_COUNTERS_SW_POWER_CAP_US
                         : policy == NVML_PERF_POLICY_SYNC_BOOST ? K_CLOCKS_THROTTLE_REASONS_COUNTERS_SYNC_BOOST_US
                                                                 : NULL;
    unsigned long long ns;
    if (!reason || !clocks_event_ns(g, reason, &ns))
        return NVML_ERROR_NOT_SUPPORTED;
    struct timeval now;
    gettimeofday(&now, NULL);
    violTime->referenceTime = (unsigned long long)now.tv_sec * 1000000 + (unsigned long long)now.tv_usec;
    violTime->violationTime = ns;
    return NVML_SUCCESS;
}
