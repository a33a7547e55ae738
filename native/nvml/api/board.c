/* Rows of a real board's report beyond what the Go profile format says: its PDI,
 * addressing mode, capabilities (EGM), pending repairs and unrepairable memory
 * (NVML 13, declared in board_info.h), the memory conf compute protects, and the
 * export-table rows of NVIDIA's nvidia-smi with no NVML call: the host's PCIe
 * generation and the part numbers. Each answers from the state's key, and
 * NOT_SUPPORTED (N/A) without it, as on boards that report none. The export
 * slots nvidia-smi 550 reads the addressing mode (241), the PCIe atomics (225)
 * and the sparse operation mode (248) from answer the same keys.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "board_info.h"
#include "nvml_newer.h"

/* The GPU behind a handle, and the output checked: the start of every call here. */
static nvmlReturn_t start(nvmlDevice_t device, const void *out, const struct mock_gpu **g)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    return out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t DECLDIR nvmlDeviceGetPdi(nvmlDevice_t device, nvmlPdi_v1_t *pdi)
{
    const struct mock_gpu *g;
    unsigned long long value;
    nvmlReturn_t ret = start(device, pdi, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (pdi->version != nvmlPdi_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!gpu_u64(g, K_PDI, &value))
        return NVML_ERROR_NOT_SUPPORTED;
    pdi->value = value;
    return NVML_SUCCESS;
}

/* The index of the GPU's `key` in `words` (a names.py tuple): 1, or 0 when it has none of them. */
static int word_index(const struct mock_gpu *g, const char *key, const char *const *words, unsigned int n,
                      unsigned int *out)
{
    char word[32];
    if (gpu_str(g, key, word, sizeof word) != 1)
        return 0;
    for (unsigned int i = 0; i < n; i++)
        if (strcasecmp(word, words[i]) == 0) {
            *out = i;
            return 1;
        }
    return 0;
}

nvmlReturn_t mock_addressing_mode(nvmlDevice_t device, unsigned int *mode)
{
    static const char *const modes[] = MOKKA_ADDRESSING_MODES;
    const struct mock_gpu *g;
    nvmlReturn_t ret = start(device, mode, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    return word_index(g, K_ADDRESSING_MODE, modes, sizeof modes / sizeof modes[0], mode) ? NVML_SUCCESS
                                                                                          : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DECLDIR nvmlDeviceGetAddressingMode(nvmlDevice_t device, nvmlDeviceAddressingMode_v1_t *mode)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mode->version != nvmlDeviceAddressingMode_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    return mock_addressing_mode(device, &mode->value);
}

nvmlReturn_t mock_sparse_operation_mode(nvmlDevice_t device, unsigned int *mode)
{
    static const char *const modes[] = {"disabled", "enabled"};
    const struct mock_gpu *g;
    nvmlReturn_t ret = start(device, mode, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    return word_index(g, K_SPARSE_OPERATION_MODE, modes, 2, mode) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

int board_atomics(const struct mock_gpu *g, int inbound, unsigned int *mask)
{
    static const char *const ops[] = MOKKA_PCIE_ATOMIC_CAPS;
    const char *list = inbound ? K_PCIE_ATOMIC_CAPS_INBOUND : K_PCIE_ATOMIC_CAPS_OUTBOUND;
    const char *item = inbound ? K_PCIE_ATOMIC_CAPS_INBOUND_N : K_PCIE_ATOMIC_CAPS_OUTBOUND_N;
    char key[128], word[32];
    if (!gpu_has_prefix(g, inbound ? K_PCIE_ATOMIC_CAPS_INBOUND "." : K_PCIE_ATOMIC_CAPS_OUTBOUND "."))
        return 0;
    unsigned int n = gpu_list_len(g, list);
    *mask = 0;
    for (unsigned int i = 0; i < n; i++) {
        snprintf(key, sizeof key, item, i);
        if (gpu_raw(g, key, word, sizeof word) != 1)
            continue;
        for (unsigned int bit = 0; bit < sizeof ops / sizeof ops[0]; bit++)
            if (strcasecmp(word, ops[bit]) == 0)
                *mask |= 1u << bit;
    }
    return 1;
}

nvmlReturn_t mock_pcie_atomics(nvmlDevice_t device, unsigned int masks[2])
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = start(device, masks, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    int out = board_atomics(g, 0, &masks[0]), in = board_atomics(g, 1, &masks[1]);
    return out || in ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DECLDIR nvmlDeviceGetLastBBXFlushTime(nvmlDevice_t device, unsigned long long *timestamp,
                                                   unsigned long *durationUs)
{
    const struct mock_gpu *g;
    unsigned long long when, took;
    nvmlReturn_t ret = start(device, timestamp && durationUs ? timestamp : NULL, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpu_u64(g, K_INFOROM_BBX_FLUSH_TIMESTAMP_US, &when) || !gpu_u64(g, K_INFOROM_BBX_FLUSH_DURATION_US, &took))
        return NVML_ERROR_NOT_SUPPORTED;
    *timestamp = when;
    *durationUs = (unsigned long)took;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetCapabilities(nvmlDevice_t device, nvmlDeviceCapabilities_v1_t *caps)
{
    const struct mock_gpu *g;
    int egm;
    nvmlReturn_t ret = start(device, caps, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (caps->version != nvmlDeviceCapabilities_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!gpu_flag(g, K_CAPABILITIES_EGM, &egm))
        return NVML_ERROR_NOT_SUPPORTED;
    caps->capMask = egm ? NVML_DEV_CAP_EGM : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetRepairStatus(nvmlDevice_t device, nvmlRepairStatus_v1_t *repairStatus)
{
    const struct mock_gpu *g;
    int channel = 0, tpc = 0;
    nvmlReturn_t ret = start(device, repairStatus, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (repairStatus->version != nvmlRepairStatus_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!gpu_has_prefix(g, K_ECC_REPAIR "."))
        return NVML_ERROR_NOT_SUPPORTED;
    gpu_flag(g, K_ECC_REPAIR_CHANNEL_PENDING, &channel);
    gpu_flag(g, K_ECC_REPAIR_TPC_PENDING, &tpc);
    repairStatus->bChannelRepairPending = (unsigned int)channel;
    repairStatus->bTpcRepairPending = (unsigned int)tpc;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetUnrepairableMemoryFlag_v1(nvmlDevice_t device,
                                                           nvmlUnrepairableMemoryStatus_v1_t *status)
{
    const struct mock_gpu *g;
    int flag;
    nvmlReturn_t ret = start(device, status, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpu_flag(g, K_ECC_UNREPAIRABLE_MEMORY, &flag))
        return NVML_ERROR_NOT_SUPPORTED;
    status->bUnrepairableMemory = (unsigned int)flag;
    return NVML_SUCCESS;
}

/* The same call by the name DCGM 4.6 resolves: the struct has no version word to tell them apart. */
nvmlReturn_t DECLDIR nvmlDeviceGetUnrepairableMemoryFlag(nvmlDevice_t device, nvmlUnrepairableMemoryStatus_t *status)
{
    return nvmlDeviceGetUnrepairableMemoryFlag_v1(device, status);
}

nvmlReturn_t DECLDIR nvmlDeviceGetConfComputeProtectedMemoryUsage(nvmlDevice_t device, nvmlMemory_t *memory)
{
    const struct mock_gpu *g;
    unsigned long long total, used = 0;
    nvmlReturn_t ret = start(device, memory, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpu_u64(g, K_CC_PROTECTED_MEMORY_TOTAL_BYTES, &total))
        return NVML_ERROR_NOT_SUPPORTED;
    gpu_u64(g, K_CC_PROTECTED_MEMORY_USED_BYTES, &used);
    memory->total = total;
    memory->used = used < total ? used : total;
    memory->free = total - memory->used;
    return NVML_SUCCESS;
}

nvmlReturn_t mock_host_max_pcie_gen(nvmlDevice_t device, unsigned int *gen)
{
    return api_u32(device, K_PCIE_MAX_HOST_LINK_GEN, gen);
}

nvmlReturn_t mock_part_number(nvmlDevice_t device, int fru, char *buf, unsigned int length)
{
    return api_string(device, fru ? K_GPU_FRU_PART_NUMBER : K_GPU_PART_NUMBER, buf, length);
}
