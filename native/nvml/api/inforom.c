/* The InfoROM's configuration checksum and its validation. NVML's checksum covers the
 * configuration of the PWR and ECC objects; the board's own algorithm is not published, so
 * the checksum is the CRC-32 of what the state says of them: the two objects' versions and
 * the ECC mode. It is the same for two GPUs configured alike and changes with the ECC mode,
 * which is what a caller compares it for. A board with an InfoROM image validates. */
#define _GNU_SOURCE
#include <stdio.h>

#include "api.h"
#include "engine/crc32.h"

static int has_inforom(const struct mock_gpu *g)
{
    char v[MOCK_VALUE_MAX];
    return gpu_str(g, K_INFOROM_IMAGE_VERSION, v, sizeof v) == 1;
}

nvmlReturn_t DECLDIR nvmlDeviceGetInforomConfigurationChecksum(nvmlDevice_t device, unsigned int *checksum)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!checksum)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!has_inforom(g))
        return NVML_ERROR_NOT_SUPPORTED;
    char pwr[64] = "", ecc[64] = "", mode[64] = "", text[3 * 64 + 3];
    gpu_raw(g, K_INFOROM_PWR_OBJECT, pwr, sizeof pwr);
    gpu_raw(g, K_INFOROM_ECC_OBJECT, ecc, sizeof ecc);
    gpu_raw(g, K_ECC_MODE_CURRENT, mode, sizeof mode);
    int n = snprintf(text, sizeof text, "%s\n%s\n%s", pwr, ecc, mode);
    *checksum = crc32_of(text, (size_t)n);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceValidateInforom(nvmlDevice_t device)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    return has_inforom(g) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}
