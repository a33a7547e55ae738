/* Who a device is: names, identifiers, PCI, board, firmware versions, modes. The
 * getters that only read one key (the name, the serial, ...) are generated from
 * getters.py. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "mig/mig.h"

#ifndef NVML_DEVICE_ARCH_BLACKWELL
#define NVML_DEVICE_ARCH_BLACKWELL 10
#endif

struct word_code {
    const char *word;
    unsigned int code;
};

/* The code of the GPU's `key` in `table`; 0 not in the state, -1 unknown word. */
static int lookup_word(const struct mock_gpu *g, const char *key, const struct word_code *table,
                       unsigned int *code)
{
    char v[64];
    if (gpu_str(g, key, v, sizeof v) != 1)
        return 0;
    for (; table->word; table++) {
        if (strcasecmp(v, table->word) == 0) {
            *code = table->code;
            return 1;
        }
    }
    return -1;
}

/* The name and UUID of a whole GPU are its keys; a MIG device's are made from its
 * parent's and its instances (../mig/mig_device.c). */
nvmlReturn_t DECLDIR nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    struct mig_device d;
    unsigned int phys, gi, ci;
    if (!mig_handle_ids(device, &phys, &gi, &ci))
        return api_string(device, K_NAME, name, length);
    nvmlReturn_t ret = mig_device_of(device, &d);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!name)
        return NVML_ERROR_INVALID_ARGUMENT;
    char text[MOCK_VALUE_MAX + MIG_NAME_MAX + 8];
    mig_device_name(&d, text, sizeof text);
    return api_copy_string(text, name, length);
}

nvmlReturn_t DECLDIR nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    struct mig_device d;
    unsigned int phys, gi, ci;
    if (!mig_handle_ids(device, &phys, &gi, &ci))
        return api_string(device, K_UUID, uuid, length);
    nvmlReturn_t ret = mig_device_of(device, &d);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    char text[MIG_UUID_SIZE];
    if (!mig_uuid(d.parent, d.gi.id, d.ci.id, text))
        return NVML_ERROR_NOT_SUPPORTED;
    return api_copy_string(text, uuid, length);
}

nvmlReturn_t DECLDIR nvmlDeviceGetInforomVersion(nvmlDevice_t device, nvmlInforomObject_t object,
                                                 char *version, unsigned int length)
{
    static const char *const keys[] = {K_INFOROM_OEM_OBJECT, K_INFOROM_ECC_OBJECT, K_INFOROM_PWR_OBJECT};
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if ((unsigned int)object >= sizeof keys / sizeof keys[0])
        return NVML_ERROR_INVALID_ARGUMENT;
    return api_string(device, keys[object], version, length);
}

nvmlReturn_t DECLDIR nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret;
    if (mig_index(device, &ret, index))           /* a MIG device: its index under its parent */
        return ret;
    ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = g->index;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int *multiGpuBool)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!multiGpuBool)
        return NVML_ERROR_INVALID_ARGUMENT;
    *multiGpuBool = 0;                            /* nvidia-smi: "MultiGPU Board: No" */
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    static const struct word_code brands[] = {
        {"nvidia", NVML_BRAND_NVIDIA}, {"tesla", NVML_BRAND_TESLA}, {"quadro", NVML_BRAND_QUADRO},
        {"geforce", NVML_BRAND_GEFORCE}, {"titan", NVML_BRAND_TITAN},
        {"nvidia_rtx", NVML_BRAND_NVIDIA_RTX}, {"quadro_rtx", NVML_BRAND_QUADRO_RTX},
        {"nvs", NVML_BRAND_NVS}, {"grid", NVML_BRAND_GRID}, {NULL, 0}};
    const struct mock_gpu *g;
    nvmlReturn_t ret = mig_gpu_or_parent(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!type)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int code = NVML_BRAND_UNKNOWN;
    if (lookup_word(g, K_BRAND, brands, &code) == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *type = (nvmlBrandType_t)code;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    static const struct word_code archs[] = {
        {"kepler", NVML_DEVICE_ARCH_KEPLER}, {"maxwell", NVML_DEVICE_ARCH_MAXWELL},
        {"pascal", NVML_DEVICE_ARCH_PASCAL}, {"volta", NVML_DEVICE_ARCH_VOLTA},
        {"turing", NVML_DEVICE_ARCH_TURING}, {"ampere", NVML_DEVICE_ARCH_AMPERE},
        {"ada", NVML_DEVICE_ARCH_ADA}, {"ada_lovelace", NVML_DEVICE_ARCH_ADA},
        {"hopper", NVML_DEVICE_ARCH_HOPPER}, {"blackwell", NVML_DEVICE_ARCH_BLACKWELL}, {NULL, 0}};
    const struct mock_gpu *g;
    nvmlReturn_t ret = mig_gpu_or_parent(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!arch)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int code = NVML_DEVICE_ARCH_UNKNOWN;
    if (lookup_word(g, K_ARCHITECTURE, archs, &code) == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *arch = code;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mig_gpu_or_parent(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    long long a, b;
    if (!gpu_i64(g, K_COMPUTE_CAPABILITY_MAJOR, &a) || !gpu_i64(g, K_COMPUTE_CAPABILITY_MINOR, &b))
        return NVML_ERROR_NOT_SUPPORTED;
    *major = (int)a;
    *minor = (int)b;
    return NVML_SUCCESS;
}

/* --- PCI ----------------------------------------------------------------------- */

/* A MIG device's is its parent's. */
static nvmlReturn_t pci_of(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mig_gpu_or_parent(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    char bus_id[MOCK_VALUE_MAX];
    unsigned int domain, bus, dev, fn;
    unsigned long long device_id = 0, subsystem_id = 0;
    if (gpu_str(g, K_PCI_BUS_ID, bus_id, sizeof bus_id) != 1 ||
        !api_parse_bus_id(bus_id, &domain, &bus, &dev, &fn))
        return NVML_ERROR_NOT_SUPPORTED;
    gpu_u64(g, K_PCI_DEVICE_ID, &device_id);
    gpu_u64(g, K_PCI_SUBSYSTEM_ID, &subsystem_id);
    api_fill_pci(pci, domain, bus, dev, fn, (unsigned int)device_id, (unsigned int)subsystem_id);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return pci_of(device, pci);
}

nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return pci_of(device, pci);
}

nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    return pci_of(device, pci);
}

nvmlReturn_t DECLDIR nvmlDeviceGetPciInfoExt(nvmlDevice_t device, nvmlPciInfoExt_t *pci)
{
    nvmlReturn_t ret = mig_check_any(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (pci->version != nvmlPciInfoExt_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlPciInfo_t base;
    ret = pci_of(device, &base);
    if (ret != NVML_SUCCESS)
        return ret;
    memset(pci, 0, sizeof *pci);
    pci->version = nvmlPciInfoExt_v1;
    pci->domain = base.domain;
    pci->bus = base.bus;
    pci->device = base.device;
    pci->pciDeviceId = base.pciDeviceId;
    pci->pciSubSystemId = base.pciSubSystemId;
    pci->baseClass = 0x3;                         /* display controller */
    pci->subClass = 0x2;                          /* 3D controller */
    memcpy(pci->busId, base.busId, sizeof pci->busId);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                 unsigned int *value)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (counter == NVML_PCIE_UTIL_TX_BYTES)
        return api_u32(device, K_PCIE_TX_THROUGHPUT_KBPS, value);
    if (counter == NVML_PCIE_UTIL_RX_BYTES)
        return api_u32(device, K_PCIE_RX_THROUGHPUT_KBPS, value);
    return NVML_ERROR_INVALID_ARGUMENT;
}

/* --- firmware and modes ----------------------------------------------------------- */

nvmlReturn_t DECLDIR nvmlDeviceGetGspFirmwareMode(nvmlDevice_t device, unsigned int *isEnabled,
                                                  unsigned int *defaultMode)
{
    nvmlEnableState_t on;
    nvmlReturn_t ret = api_enabled(device, K_GSP_FIRMWARE_MODE, isEnabled && defaultMode ? &on : NULL);
    if (ret == NVML_SUCCESS)
        *isEnabled = *defaultMode = on == NVML_FEATURE_ENABLED;
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceGetC2cModeInfoV(nvmlDevice_t device, nvmlC2cModeInfo_v1_t *c2cModeInfo)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!c2cModeInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* Only a GPU joined to its CPU by NVLink-C2C (a Grace superchip) has the mode; a
     * captured board says which it is in (an H100 prints Disabled). */
    int c2c = 0, grace = 0;
    if (gpu_flag(g, K_C2C_MODE, &c2c)) {
        c2cModeInfo->isC2cEnabled = (unsigned int)c2c;
        return NVML_SUCCESS;
    }
    gpu_flag(g, K_FEATURES_NVLINK_C2C, &c2c);
    gpu_flag(g, K_GRACE_SUPERCHIP_ENABLED, &grace);
    if (!c2c && !grace)
        return NVML_ERROR_NOT_SUPPORTED;
    c2cModeInfo->isC2cEnabled = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    static const struct word_code modes[] = {
        {"default", NVML_COMPUTEMODE_DEFAULT}, {"exclusive_thread", NVML_COMPUTEMODE_EXCLUSIVE_THREAD},
        {"prohibited", NVML_COMPUTEMODE_PROHIBITED},
        {"exclusive_process", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS}, {NULL, 0}};
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int code = NVML_COMPUTEMODE_DEFAULT;     /* values.compute_mode: default when unset */
    if (lookup_word(g, K_COMPUTE_MODE, modes, &code) < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *mode = (nvmlComputeMode_t)code;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuOperationMode(nvmlDevice_t device, nvmlGpuOperationMode_t *current,
                                                   nvmlGpuOperationMode_t *pending)
{
    static const struct word_code goms[] = {
        {"all_on", NVML_GOM_ALL_ON}, {"compute", NVML_GOM_COMPUTE}, {"low_dp", NVML_GOM_LOW_DP}, {NULL, 0}};
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int cur, pend;
    if (lookup_word(g, K_GPU_OPERATION_MODE_CURRENT, goms, &cur) != 1 ||
        lookup_word(g, K_GPU_OPERATION_MODE_PENDING, goms, &pend) != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = (nvmlGpuOperationMode_t)cur;
    *pending = (nvmlGpuOperationMode_t)pend;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetVirtualizationMode(nvmlDevice_t device, nvmlGpuVirtualizationMode_t *pVirtualMode)
{
    static const struct word_code modes[] = {
        {"none", NVML_GPU_VIRTUALIZATION_MODE_NONE}, {"passthrough", NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH},
        {"vgpu", NVML_GPU_VIRTUALIZATION_MODE_VGPU}, {"host_vgpu", NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU},
        {"host_vsga", NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA}, {NULL, 0}};
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!pVirtualMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int code;
    if (lookup_word(g, K_VIRTUALIZATION_MODE, modes, &code) != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    *pVirtualMode = (nvmlGpuVirtualizationMode_t)code;
    return NVML_SUCCESS;
}
