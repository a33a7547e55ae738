/* Calls NVML offers from Blackwell on (nvml_newer.h): workload power profiles and PRM
 * register access to the NVLink ports. On the boards before Blackwell (A100, H100) the
 * driver answers NOT_SUPPORTED once the handle and the argument are good, and so does the
 * mock. On Blackwell boards the mock holds no power profiles and no PRM registers yet:
 * NOT_SUPPORTED there too, a known gap rather than the board's answer.
 *
 * Each checks what the driver checks first: the handle (a MIG device is no target), the
 * pointer (INVALID_ARGUMENT), a versioned struct's version (ARGUMENT_VERSION_MISMATCH).
 */
#include "api.h"
#include "nvml_newer.h"

static nvmlReturn_t checked(nvmlDevice_t device, const void *arg)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    return arg ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static nvmlReturn_t versioned(nvmlDevice_t device, const unsigned int *version, unsigned int expected)
{
    nvmlReturn_t ret = checked(device, version);
    if (ret != NVML_SUCCESS)
        return ret;
    return *version == expected ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

static nvmlReturn_t unversioned(nvmlDevice_t device, const void *arg)
{
    nvmlReturn_t ret = checked(device, arg);
    return ret != NVML_SUCCESS ? ret : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileGetProfilesInfo(nvmlDevice_t device,
                                                                   nvmlWorkloadPowerProfileProfilesInfo_t *profilesInfo)
{
    return versioned(device, profilesInfo ? &profilesInfo->version : NULL, nvmlWorkloadPowerProfileProfilesInfo_v1);
}

nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileGetCurrentProfiles(
    nvmlDevice_t device, nvmlWorkloadPowerProfileCurrentProfiles_t *currentProfiles)
{
    return versioned(device, currentProfiles ? &currentProfiles->version : NULL,
                     nvmlWorkloadPowerProfileCurrentProfiles_v1);
}

nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileSetRequestedProfiles(
    nvmlDevice_t device, nvmlWorkloadPowerProfileRequestedProfiles_t *requestedProfiles)
{
    return versioned(device, requestedProfiles ? &requestedProfiles->version : NULL,
                     nvmlWorkloadPowerProfileRequestedProfiles_v1);
}

nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileClearRequestedProfiles(
    nvmlDevice_t device, nvmlWorkloadPowerProfileRequestedProfiles_t *requestedProfiles)
{
    return versioned(device, requestedProfiles ? &requestedProfiles->version : NULL,
                     nvmlWorkloadPowerProfileRequestedProfiles_v1);
}

nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileUpdateProfiles_v1(nvmlDevice_t device,
                                                                     nvmlWorkloadPowerProfileUpdateProfiles_v1_t *updateProfiles)
{
    return unversioned(device, updateProfiles);
}

nvmlReturn_t DECLDIR nvmlDeviceReadWritePRM_v1(nvmlDevice_t device, nvmlPRMTLV_v1_t *buffer)
{
    return unversioned(device, buffer);
}

nvmlReturn_t DECLDIR nvmlDeviceReadPRMCounters_v1(nvmlDevice_t device, nvmlPRMCounterList_v1_t *counterList)
{
    return unversioned(device, counterList);
}
