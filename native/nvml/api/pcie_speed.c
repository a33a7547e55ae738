/* The PCIe link's speed and the bus it is on: what a link generation signals per lane. */
#define _GNU_SOURCE
#include "api.h"

/* Per lane, in Mbps (GT/s * 1000), by PCIe generation 1..6. */
static const unsigned int LANE_MBPS[] = {0, 2500, 5000, 8000, 16000, 32000, 64000};

static nvmlReturn_t generation(nvmlDevice_t device, const char *key, unsigned int *gen, const void *out)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long v;
    if (!gpu_u64(g, key, &v) || v == 0 || v >= sizeof LANE_MBPS / sizeof LANE_MBPS[0])
        return NVML_ERROR_NOT_SUPPORTED;
    *gen = (unsigned int)v;
    return NVML_SUCCESS;
}

/* The current link's speed per lane: 16000 on a Gen4 link. */
nvmlReturn_t DECLDIR nvmlDeviceGetPcieSpeed(nvmlDevice_t device, unsigned int *pcieSpeed)
{
    unsigned int gen;
    nvmlReturn_t ret = generation(device, K_PCIE_CURRENT_LINK_GEN, &gen, pcieSpeed);
    if (ret == NVML_SUCCESS)
        *pcieSpeed = LANE_MBPS[gen];
    return ret;
}

/* The link's most, as nvml.h's NVML_PCIE_LINK_MAX_SPEED_* (one per generation, from 1). */
nvmlReturn_t DECLDIR nvmlDeviceGetPcieLinkMaxSpeed(nvmlDevice_t device, unsigned int *maxSpeed)
{
    unsigned int gen;
    nvmlReturn_t ret = generation(device, K_PCIE_MAX_LINK_GEN, &gen, maxSpeed);
    if (ret == NVML_SUCCESS)
        *maxSpeed = NVML_PCIE_LINK_MAX_SPEED_2500MBPS + gen - 1;
    return ret;
}

/* Every board a profile describes sits on PCIe (an SXM module too: its host link is PCIe). */
nvmlReturn_t DECLDIR nvmlDeviceGetBusType(nvmlDevice_t device, nvmlBusType_t *type)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!type)
        return NVML_ERROR_INVALID_ARGUMENT;
    *type = NVML_BUS_TYPE_PCIE;
    return NVML_SUCCESS;
}
