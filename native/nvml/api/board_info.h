/* Calls of NVML 13 (driver 580 on) that the report of a real board shows and the
 * nvml.h the build pins lacks: declared here with NVIDIA's published layouts
 * (nvml.h 13): a consumer built against a newer header passes these structs, so
 * they must match byte for byte.
 */
#ifndef MOKKA_NVML_BOARD_INFO_H
#define MOKKA_NVML_BOARD_INFO_H

#include <nvml.h>

#include "engine/visibility.h"

typedef struct {
    unsigned int version;                     /* nvmlPdi_v1 */
    unsigned long long value;                 /* the 64-bit PDI */
} nvmlPdi_v1_t;
#define nvmlPdi_v1 NVML_STRUCT_VERSION(Pdi, 1)

typedef struct {
    unsigned int version;                     /* nvmlDeviceAddressingMode_v1 */
    unsigned int value;                       /* 0 none, 1 HMM, 2 ATS */
} nvmlDeviceAddressingMode_v1_t;
#define nvmlDeviceAddressingMode_v1 NVML_STRUCT_VERSION(DeviceAddressingMode, 1)

typedef struct {
    unsigned int version;                     /* nvmlDeviceCapabilities_v1 */
    unsigned int capMask;                     /* NVML_DEV_CAP_EGM is bit 0 */
} nvmlDeviceCapabilities_v1_t;
#define nvmlDeviceCapabilities_v1 NVML_STRUCT_VERSION(DeviceCapabilities, 1)
#define NVML_DEV_CAP_EGM (1 << 0)

typedef struct {
    unsigned int version;                     /* nvmlRepairStatus_v1 */
    unsigned int bChannelRepairPending;
    unsigned int bTpcRepairPending;
} nvmlRepairStatus_v1_t;
#define nvmlRepairStatus_v1 NVML_STRUCT_VERSION(RepairStatus, 1)

typedef struct {
    unsigned int bUnrepairableMemory;         /* no version word: NVML 13's v1 */
} nvmlUnrepairableMemoryStatus_v1_t;

_Static_assert(sizeof(nvmlPdi_v1_t) == 16 && sizeof(nvmlDeviceAddressingMode_v1_t) == 8 &&
               sizeof(nvmlDeviceCapabilities_v1_t) == 8 && sizeof(nvmlRepairStatus_v1_t) == 12,
               "NVIDIA's layouts");

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetPdi(nvmlDevice_t device, nvmlPdi_v1_t *pdi);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetAddressingMode(nvmlDevice_t device, nvmlDeviceAddressingMode_v1_t *mode);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetCapabilities(nvmlDevice_t device, nvmlDeviceCapabilities_v1_t *caps);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetRepairStatus(nvmlDevice_t device, nvmlRepairStatus_v1_t *repairStatus);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetUnrepairableMemoryFlag_v1(nvmlDevice_t device,
                                                                       nvmlUnrepairableMemoryStatus_v1_t *status);

#endif
