/* How long a reason held the clocks back: the state's
 * `clocks_throttle_reasons.counters.<reason>_us`, which nvidia-smi -q prints as
 * "Clocks Event Reasons Counters" (microseconds) and NVML gives in nanoseconds.
 *
 * Three of NVML's older perf-policy counters read them, so nvmlDeviceGetViolationStatus
 * and the policies' field ids (74-76) answer the same numbers: POWER is SW power capping,
 * SYNC_BOOST sync boost (their field ids are those of the clocks event reasons' counters),
 * and THERMAL the time either thermal slowdown (software or hardware) held the clocks.
 * The other policies (board limit, low utilization, reliability, the application and base
 * clock totals) have no counter in the state: NOT_SUPPORTED. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/time.h>

#include "api.h"

int clocks_event_ns(const struct mock_gpu *g, const char *counter_key, unsigned long long *ns)
{
    unsigned long long us;
    return gpu_u64(g, counter_key, &us) && !__builtin_mul_overflow(us, 1000ULL, ns);
}

int perf_policy_ns(const struct mock_gpu *g, unsigned int policy, unsigned long long *ns)
{
    unsigned long long sw, hw;
    switch (policy) {
    case NVML_PERF_POLICY_POWER:
        return clocks_event_ns(g, K_CLOCKS_THROTTLE_REASONS_COUNTERS_SW_POWER_CAP_US, ns);
    case NVML_PERF_POLICY_SYNC_BOOST:
        return clocks_event_ns(g, K_CLOCKS_THROTTLE_REASONS_COUNTERS_SYNC_BOOST_US, ns);
    case NVML_PERF_POLICY_THERMAL:
        if (!clocks_event_ns(g, K_CLOCKS_THROTTLE_REASONS_COUNTERS_SW_THERMAL_SLOWDOWN_US, &sw) ||
            !clocks_event_ns(g, K_CLOCKS_THROTTLE_REASONS_COUNTERS_HW_THERMAL_SLOWDOWN_US, &hw))
            return 0;
        *ns = __builtin_add_overflow(sw, hw, ns) ? ~0ull : *ns;
        return 1;
    default:
        return 0;
    }
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
    unsigned long long ns;
    if (!perf_policy_ns(g, policy, &ns))
        return NVML_ERROR_NOT_SUPPORTED;
    struct timeval now;
    gettimeofday(&now, NULL);
    violTime->referenceTime = (unsigned long long)now.tv_sec * 1000000 + (unsigned long long)now.tv_usec;
    violTime->violationTime = ns;
    return NVML_SUCCESS;
}
