/* GPUs the driver was told to leave alone (NVreg_ExcludedGpus): a Mokka node excludes none,
 * so nvmlGetExcludedDeviceCount (system.c) answers 0 and every index is past the count. */
#include "api.h"

nvmlReturn_t DECLDIR nvmlGetExcludedDeviceInfoByIndex(unsigned int index, nvmlExcludedDeviceInfo_t *info)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    (void)index;
    (void)info;
    return NVML_ERROR_INVALID_ARGUMENT;           /* no index is below a count of 0 */
}
