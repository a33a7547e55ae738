/* Thermal settings: the board's sensors as nvmlDeviceGetThermalSettings lists them. The
 * GPU's own sensor always; the memory's when the state reads its temperature (HBM boards).
 * Each reads from 0 C to the limit nvidia-smi shows for it: the shutdown threshold for the
 * GPU, the memory's maximum for the memory. And the thermal margin: how far the GPU's
 * temperature is from its slowdown threshold. */
#define _GNU_SOURCE
#include <limits.h>
#include <string.h>

#include "api.h"
#include "nvml_newer.h"

struct sensor {
    nvmlThermalTarget_t target;
    const char *current, *max;
};

static const struct sensor SENSORS[] = {
    {NVML_THERMAL_TARGET_GPU, K_THERMAL_TEMPERATURE_GPU_C, K_THERMAL_SHUTDOWN_THRESHOLD_C},
    {NVML_THERMAL_TARGET_MEMORY, K_THERMAL_TEMPERATURE_MEMORY_C, K_THERMAL_MEMORY_MAX_C},
};

/* v within an int (the state is written by whoever can write driver/config). */
static int as_int(long long v)
{
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

/* 1 and the sensor's reading when the state has both its temperature and its limit. */
static int read_sensor(const struct mock_gpu *g, const struct sensor *s, int *current, int *max)
{
    long long c, m;
    if (!gpu_i64(g, s->current, &c) || !gpu_i64(g, s->max, &m))
        return 0;
    *current = as_int(c);
    *max = as_int(m);
    return 1;
}

/* sensorIndex: one sensor by its place in the list, or NVML_THERMAL_TARGET_ALL for all. */
nvmlReturn_t DECLDIR nvmlDeviceGetThermalSettings(nvmlDevice_t device, unsigned int sensorIndex,
                                                  nvmlGpuThermalSettings_t *pThermalSettings)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!pThermalSettings)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlGpuThermalSettings_t out;
    memset(&out, 0, sizeof out);
    for (unsigned int i = 0; i < sizeof SENSORS / sizeof SENSORS[0]; i++) {
        int current, max;
        if (!read_sensor(g, &SENSORS[i], &current, &max))
            continue;
        out.sensor[out.count].controller = NVML_THERMAL_CONTROLLER_GPU_INTERNAL;
        out.sensor[out.count].defaultMinTemp = 0;
        out.sensor[out.count].defaultMaxTemp = max;
        out.sensor[out.count].currentTemp = current;
        out.sensor[out.count].target = SENSORS[i].target;
        out.count++;
    }
    if (out.count == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (sensorIndex == NVML_THERMAL_TARGET_ALL) {
        *pThermalSettings = out;
        return NVML_SUCCESS;
    }
    if (sensorIndex >= out.count)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pThermalSettings, 0, sizeof *pThermalSettings);
    pThermalSettings->count = 1;
    pThermalSettings->sensor[0] = out.sensor[sensorIndex];
    return NVML_SUCCESS;
}

/* The margin to the nearest slowdown: from Ada and Hopper on that is T.Limit, the maximum
 * operating temperature where the software slowdown starts, so the margin is the T.Limit
 * reading both nvidia-smis show ("GPU T.Limit Temp", fields.c). A board before them has no
 * T.Limit sensor: its nearest is the slowdown threshold, less the temperature
 * nvmlDeviceGetTemperature reads now. A MIG device has no sensor of its own (NOT_SUPPORTED,
 * as for the temperature). */
nvmlReturn_t DECLDIR nvmlDeviceGetMarginTemperature(nvmlDevice_t device, nvmlMarginTemperature_t *marginTempInfo)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!marginTempInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (marginTempInfo->version != nvmlMarginTemperature_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!api_pre_ada(g))
        return mock_tlimit_temperature(device, &marginTempInfo->marginTemperature);
    long long current, slowdown, margin;
    if (!gpu_i64(g, K_THERMAL_TEMPERATURE_GPU_C, &current) || !gpu_i64(g, K_THERMAL_SLOWDOWN_THRESHOLD_C, &slowdown) ||
        __builtin_sub_overflow(slowdown, current, &margin))  /* an override can hold any integer */
        return NVML_ERROR_NOT_SUPPORTED;
    marginTempInfo->marginTemperature = as_int(margin);
    return NVML_SUCCESS;
}
