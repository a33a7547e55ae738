/* What a device is doing: memory, temperature, power, clocks, utilization,
 * fans, performance state, ECC and row remapping (mokka/smi/values.py and
 * report.py show how nvidia-smi prints the same state fields). The getters
 * that only read one key (power draw and limits, energy, fan count) are
 * generated from getters.py. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "mig/mig.h"
#include "processes.h"

#define SAMPLING_PERIOD_US 1000000u

/* --- memory ----------------------------------------------------------------------- */

struct mem { unsigned long long total, reserved, used, free; };

static nvmlReturn_t memory_of(nvmlDevice_t device, struct mem *m)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret;
    memset(m, 0, sizeof *m);
    if (mig_memory(device, &ret, &m->total)) {    /* a MIG device: its own, all of it free */
        m->free = m->total;
        return ret;
    }
    if ((ret = mock_gpu_of(device, &g)) != NVML_SUCCESS)
        return ret;
    if (!gpu_u64(g, K_MEMORY_TOTAL_BYTES, &m->total))
        return NVML_ERROR_NOT_SUPPORTED;
    gpu_u64(g, K_MEMORY_RESERVED_BYTES, &m->reserved);
    gpu_u64(g, K_MEMORY_USED_BYTES, &m->used);
    /* The node's CUDA processes, never past what the board has (a record is hostile input). */
    unsigned long long live = mock_processes_used(g);
    unsigned long long usable = m->total > m->reserved ? m->total - m->reserved : 0;
    if (live > 0)
        m->used = m->used < usable ? m->used + (live < usable - m->used ? live : usable - m->used) : m->used;
    unsigned long long taken = m->reserved + m->used;  /* values.memory_mib: never negative */
    m->free = taken < m->total ? m->total - taken : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    nvmlReturn_t ret = mig_check_any(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct mem m;
    if ((ret = memory_of(device, &m)) != NVML_SUCCESS)
        return ret;
    memory->total = m.total;
    memory->free = m.free;
    memory->used = m.total - m.free;              /* v1 counts the reserved memory as used */
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    nvmlReturn_t ret = mig_check_any(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct mem m;
    if ((ret = memory_of(device, &m)) != NVML_SUCCESS)
        return ret;
    memory->total = m.total;
    memory->reserved = m.reserved;
    memory->used = m.used;
    memory->free = m.free;
    return NVML_SUCCESS;
}

/* A MIG device maps through its parent's BAR1, with nothing of its own mapped. */
nvmlReturn_t DECLDIR nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t *bar1Memory)
{
    const struct mock_gpu *g;
    unsigned int phys, gi, ci;
    int mig = mig_handle_ids(device, &phys, &gi, &ci);
    nvmlReturn_t ret = mig_gpu_or_parent(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!bar1Memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long total, used = 0;
    if (!gpu_u64(g, K_BAR1_MEMORY_TOTAL_BYTES, &total))
        return NVML_ERROR_NOT_SUPPORTED;
    if (!mig)
        gpu_u64(g, K_BAR1_MEMORY_USED_BYTES, &used);
    bar1Memory->bar1Total = total;
    bar1Memory->bar1Used = used;
    bar1Memory->bar1Free = used < total ? total - used : 0;
    return NVML_SUCCESS;
}

/* --- temperature ------------------------------------------------------------------ */

nvmlReturn_t DECLDIR nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                              unsigned int *temp)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (sensorType != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    return api_u32(device, K_THERMAL_TEMPERATURE_GPU_C, temp);
}

nvmlReturn_t DECLDIR nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                       nvmlTemperatureThresholds_t thresholdType,
                                                       unsigned int *temp)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    switch (thresholdType) {
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
        return api_u32(device, K_THERMAL_SHUTDOWN_THRESHOLD_C, temp);
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
        return api_u32(device, K_THERMAL_SLOWDOWN_THRESHOLD_C, temp);
    case NVML_TEMPERATURE_THRESHOLD_GPU_MAX:
        return api_u32(device, K_THERMAL_MAX_OPERATING_C, temp);
    case NVML_TEMPERATURE_THRESHOLD_MEM_MAX:      /* nvidia-smi shows it before Ada only */
        return api_pre_ada(g) ? api_u32(device, K_THERMAL_MEMORY_MAX_C, temp) : NVML_ERROR_NOT_SUPPORTED;
    case NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR:
        return api_pre_ada(g) ? api_u32(device, K_THERMAL_TARGET_TEMPERATURE_C, temp)
                              : NVML_ERROR_NOT_SUPPORTED;
    case NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN:
    case NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX:
        return NVML_ERROR_NOT_SUPPORTED;
    default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
}

/* --- power --------------------------------------------------------------------------- */

nvmlReturn_t DECLDIR nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int *minLimit,
                                                                  unsigned int *maxLimit)
{
    unsigned int lo = 0, hi = 0;
    nvmlReturn_t ret = api_u32(device, K_POWER_MIN_LIMIT_MW, minLimit && maxLimit ? &lo : NULL);
    if (ret == NVML_SUCCESS)
        ret = api_u32(device, K_POWER_MAX_LIMIT_MW, &hi);
    if (ret == NVML_SUCCESS) {
        *minLimit = lo;
        *maxLimit = hi;
    }
    return ret;
}

/* --- performance state ----------------------------------------------------------------- */

static nvmlReturn_t pstate_of(nvmlDevice_t device, nvmlPstates_t *state)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!state)
        return NVML_ERROR_INVALID_ARGUMENT;
    char v[32];
    if (gpu_str(g, K_PERFORMANCE_STATE, v, sizeof v) != 1 && gpu_str(g, K_POWER_POWER_STATE, v, sizeof v) != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned int n;
    char tail;
    if ((v[0] != 'P' && v[0] != 'p') || sscanf(v + 1, "%u%c", &n, &tail) != 1 || n > 15)
        return NVML_ERROR_NOT_SUPPORTED;
    *state = (nvmlPstates_t)n;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    return pstate_of(device, pState);
}

/* The older name of the performance state, which later drivers deprecate. */
nvmlReturn_t DECLDIR nvmlDeviceGetPowerState(nvmlDevice_t device, nvmlPstates_t *pState)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret == NVML_SUCCESS)
        ret = api_refusal(g, K_REFUSED_POWER_STATE);
    return ret != NVML_SUCCESS ? ret : pstate_of(device, pState);
}

/* Bit i of the event-reason mask, in nvml.h's order. */
static const char *const reasons[] = {
    K_CLOCKS_THROTTLE_REASONS_GPU_IDLE, K_CLOCKS_THROTTLE_REASONS_APPLICATIONS_CLOCKS_SETTING,
    K_CLOCKS_THROTTLE_REASONS_SW_POWER_CAP, K_CLOCKS_THROTTLE_REASONS_HW_SLOWDOWN,
    K_CLOCKS_THROTTLE_REASONS_SYNC_BOOST, K_CLOCKS_THROTTLE_REASONS_SW_THERMAL_SLOWDOWN,
    K_CLOCKS_THROTTLE_REASONS_HW_THERMAL_SLOWDOWN, K_CLOCKS_THROTTLE_REASONS_HW_POWER_BRAKE_SLOWDOWN,
    K_CLOCKS_THROTTLE_REASONS_DISPLAY_CLOCKS_SETTING};

static nvmlReturn_t current_reasons(nvmlDevice_t device, unsigned long long *mask)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!mask)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu_has_prefix(g, K_CLOCKS_THROTTLE_REASONS "."))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long m = 0;
    for (unsigned int i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        int on = 0;
        if (gpu_flag(g, reasons[i], &on) && on)
            m |= 1ull << i;
    }
    *mask = m;
    return NVML_SUCCESS;
}

static nvmlReturn_t supported_reasons(nvmlDevice_t device, unsigned long long *mask)
{
    unsigned long long current;
    nvmlReturn_t ret = current_reasons(device, mask ? &current : NULL);
    if (ret == NVML_SUCCESS)
        *mask = (1ull << (sizeof reasons / sizeof reasons[0])) - 1;   /* 0x1FF */
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *clocksEventReasons)
{
    return current_reasons(device, clocksEventReasons);
}

nvmlReturn_t DECLDIR nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *clocksThrottleReasons)
{
    return current_reasons(device, clocksThrottleReasons);
}

nvmlReturn_t DECLDIR nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device, unsigned long long *supportedClocksEventReasons)
{
    return supported_reasons(device, supportedClocksEventReasons);
}

nvmlReturn_t DECLDIR nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device, unsigned long long *supportedClocksThrottleReasons)
{
    return supported_reasons(device, supportedClocksThrottleReasons);
}

/* --- utilization, encoder, decoder ------------------------------------------------------ */

/* nvml.h: not supported on MIG-enabled GPUs (nvidia-smi prints N/A). */
nvmlReturn_t DECLDIR nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long gpu, mem;
    if (!gpu_u64(g, K_UTILIZATION_GPU, &gpu) || !gpu_u64(g, K_UTILIZATION_MEMORY, &mem))
        return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = (unsigned int)gpu;
    utilization->memory = (unsigned int)mem;
    return NVML_SUCCESS;
}

static nvmlReturn_t sampled(nvmlDevice_t device, const char *key, unsigned int *value, unsigned int *period)
{
    const struct mock_gpu *g;
    unsigned int v = 0;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret == NVML_SUCCESS && value && period && mig_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    ret = api_u32(device, key, value && period ? &v : NULL);
    if (ret == NVML_SUCCESS) {
        *value = v;
        *period = SAMPLING_PERIOD_US;
    }
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                     unsigned int *samplingPeriodUs)
{
    return sampled(device, K_UTILIZATION_ENCODER, utilization, samplingPeriodUs);
}

nvmlReturn_t DECLDIR nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                     unsigned int *samplingPeriodUs)
{
    return sampled(device, K_UTILIZATION_DECODER, utilization, samplingPeriodUs);
}

nvmlReturn_t DECLDIR nvmlDeviceGetJpgUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                 unsigned int *samplingPeriodUs)
{
    return sampled(device, K_UTILIZATION_JPEG, utilization, samplingPeriodUs);
}

nvmlReturn_t DECLDIR nvmlDeviceGetOfaUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                 unsigned int *samplingPeriodUs)
{
    return sampled(device, K_UTILIZATION_OFA, utilization, samplingPeriodUs);
}

/* The keys of an encoder_stats or fbc_stats block. */
struct stats_keys {
    const char *session_count, *average_fps, *average_latency_us;
};
static const struct stats_keys ENCODER_STATS = {K_ENCODER_STATS_SESSION_COUNT, K_ENCODER_STATS_AVERAGE_FPS,
                                                K_ENCODER_STATS_AVERAGE_LATENCY_US};
static const struct stats_keys FBC_STATS = {K_FBC_STATS_SESSION_COUNT, K_FBC_STATS_AVERAGE_FPS,
                                            K_FBC_STATS_AVERAGE_LATENCY_US};

static nvmlReturn_t stats(nvmlDevice_t device, const struct stats_keys *block, unsigned int *count,
                          unsigned int *fps, unsigned int *latency)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count || !fps || !latency)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long c = 0, f = 0, l = 0;       /* report._stats: 0 when unset */
    gpu_u64(g, block->session_count, &c);
    gpu_u64(g, block->average_fps, &f);
    gpu_u64(g, block->average_latency_us, &l);
    *count = (unsigned int)c;
    *fps = (unsigned int)f;
    *latency = (unsigned int)l;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetEncoderStats(nvmlDevice_t device, unsigned int *sessionCount,
                                               unsigned int *averageFps, unsigned int *averageLatency)
{
    return stats(device, &ENCODER_STATS, sessionCount, averageFps, averageLatency);
}

nvmlReturn_t DECLDIR nvmlDeviceGetFBCStats(nvmlDevice_t device, nvmlFBCStats_t *fbcStats)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!fbcStats)
        return NVML_ERROR_INVALID_ARGUMENT;
    return stats(device, &FBC_STATS, &fbcStats->sessionsCount, &fbcStats->averageFPS,
                 &fbcStats->averageLatency);
}

nvmlReturn_t DECLDIR nvmlDeviceGetEncoderSessions(nvmlDevice_t device, unsigned int *sessionCount,
                                                  nvmlEncoderSessionInfo_t *sessionInfos)
{
    (void)sessionInfos;
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!sessionCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *sessionCount = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetFBCSessions(nvmlDevice_t device, unsigned int *sessionCount,
                                              nvmlFBCSessionInfo_t *sessionInfo)
{
    return nvmlDeviceGetEncoderSessions(device, sessionCount, (nvmlEncoderSessionInfo_t *)(void *)sessionInfo);
}

/* --- fans ---------------------------------------------------------------------------------- */

static nvmlReturn_t fan_value(nvmlDevice_t device, unsigned int fan, const char *key, unsigned int *speed)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!speed)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long count = 0, v;
    if (!gpu_u64(g, K_FAN_COUNT, &count) || count == 0)
        return NVML_ERROR_NOT_SUPPORTED;          /* values.fan: no fans, N/A */
    if (fan >= count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpu_u64(g, key, &v))
        return NVML_ERROR_NOT_SUPPORTED;
    *speed = (unsigned int)v;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
    return fan_value(device, 0, K_FAN_SPEED_PERCENT, speed);
}

nvmlReturn_t DECLDIR nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan, unsigned int *speed)
{
    return fan_value(device, fan, K_FAN_SPEED_PERCENT, speed);
}

nvmlReturn_t DECLDIR nvmlDeviceGetTargetFanSpeed(nvmlDevice_t device, unsigned int fan, unsigned int *targetSpeed)
{
    return fan_value(device, fan, K_FAN_TARGET_SPEED_PERCENT, targetSpeed);
}
