/* What a board reports of its supply and its clocking that no profile varies: a server
 * GPU runs on mains power, and from Ampere on its driver clocks it adaptively (the clock
 * follows voltage droop); the boards before Ampere answer NOT_SUPPORTED. */
#define _GNU_SOURCE

#include "api.h"

static nvmlReturn_t board(nvmlDevice_t device, const struct mock_gpu **g, const void *out)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    return out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* Whether the architecture predates Ampere (Turing's T4 and older), or is not named. */
static int pre_ampere(const struct mock_gpu *g)
{
    return api_arch_before(g, "ampere") != 0;
}

nvmlReturn_t DECLDIR nvmlDeviceGetPowerSource(nvmlDevice_t device, nvmlPowerSource_t *powerSource)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = board(device, &g, powerSource);
    if (ret == NVML_SUCCESS)
        *powerSource = NVML_POWER_SOURCE_AC;
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceGetAdaptiveClockInfoStatus(nvmlDevice_t device, unsigned int *adaptiveClockStatus)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = board(device, &g, adaptiveClockStatus);
    if (ret != NVML_SUCCESS)
        return ret;
    if (pre_ampere(g))
        return NVML_ERROR_NOT_SUPPORTED;
    *adaptiveClockStatus = NVML_ADAPTIVE_CLOCKING_INFO_STATUS_ENABLED;
    return NVML_SUCCESS;
}
