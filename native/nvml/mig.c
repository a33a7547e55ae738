/* MIG as the profile declares it: capable when mig.max_gpu_instances > 0
 * (values.mig_mode); no instances exist, and creating them is not supported. */
#define _GNU_SOURCE
#include "mock.h"

static nvmlReturn_t mig_capable(nvmlDevice_t device, const struct mock_gpu **g, unsigned long long *max)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpu_u64(*g, K_MIG_MAX_GPU_INSTANCES, max) || *max == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    const struct mock_gpu *g;
    unsigned long long max;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((ret = mig_capable(device, &g, &max)) != NVML_SUCCESS)
        return ret;
    int cur = 0, pend = 0;                        /* unset: Disabled */
    gpu_flag(g, K_MIG_MODE_CURRENT, &cur);
    gpu_flag(g, K_MIG_MODE_PENDING, &pend);
    *currentMode = cur ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pendingMode = pend ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    const struct mock_gpu *g;
    unsigned long long max;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((ret = mig_capable(device, &g, &max)) != NVML_SUCCESS)
        return ret;
    *count = (unsigned int)max;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!isMigDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = 0;                             /* every handle is a whole GPU */
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                         nvmlDevice_t *migDevice)
{
    const struct mock_gpu *g;
    unsigned long long max;
    (void)index;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!migDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((ret = mig_capable(device, &g, &max)) != NVML_SUCCESS)
        return ret;
    return NVML_ERROR_NOT_FOUND;                  /* no MIG devices exist */
}
