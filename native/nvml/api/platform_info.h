/* nvmlDeviceGetPlatformInfo, which NVML has from 12.6 (driver 560) on: newer than
 * the nvml.h the build pins, so declared here. The layouts are NVIDIA's published
 * ABI (the NVML API reference; nvml.h 12.9): a consumer built against a newer
 * header passes these structs, so they must match byte for byte.
 */
#ifndef MOKKA_NVML_PLATFORM_INFO_H
#define MOKKA_NVML_PLATFORM_INFO_H

#include <stddef.h>

#include <nvml.h>

#include "engine/visibility.h"

typedef struct {
    unsigned int version;                     /* nvmlPlatformInfo_v1 */
    unsigned char ibGuid[16];                 /* Blackwell: 8 bytes, 8-15 zero */
    unsigned char rackGuid[16];               /* Blackwell: the chassis serial, 13 bytes */
    unsigned char chassisPhysicalSlotNumber;  /* switch trays included */
    unsigned char computeSlotIndex;           /* compute trays only */
    unsigned char nodeIndex;                  /* the node within its slot */
    unsigned char peerType;                   /* how NVLink peers are reached */
    unsigned char moduleId;                   /* the GPU within its node */
} nvmlPlatformInfo_v1_t;

/* The same bytes as v1, renamed: rackGuid became chassisSerialNumber, and so on. */
typedef struct {
    unsigned int version;                     /* nvmlPlatformInfo_v2 */
    unsigned char ibGuid[16];
    unsigned char chassisSerialNumber[16];
    unsigned char slotNumber;
    unsigned char trayIndex;
    unsigned char hostId;
    unsigned char peerType;
    unsigned char moduleId;
} nvmlPlatformInfo_v2_t;

typedef nvmlPlatformInfo_v2_t nvmlPlatformInfo_t;

#define nvmlPlatformInfo_v1 NVML_STRUCT_VERSION(PlatformInfo, 1)
#define nvmlPlatformInfo_v2 NVML_STRUCT_VERSION(PlatformInfo, 2)

_Static_assert(sizeof(nvmlPlatformInfo_v1_t) == 44 && sizeof(nvmlPlatformInfo_v2_t) == 44,
               "NVIDIA's nvmlPlatformInfo_v1_t and _v2_t are 44 bytes");
_Static_assert(offsetof(nvmlPlatformInfo_v1_t, rackGuid) == offsetof(nvmlPlatformInfo_v2_t, chassisSerialNumber) &&
               offsetof(nvmlPlatformInfo_v1_t, chassisPhysicalSlotNumber) == offsetof(nvmlPlatformInfo_v2_t, slotNumber) &&
               offsetof(nvmlPlatformInfo_v1_t, moduleId) == offsetof(nvmlPlatformInfo_v2_t, moduleId),
               "v1 and v2 name the same bytes, so one filling serves both");

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetPlatformInfo(nvmlDevice_t device, nvmlPlatformInfo_t *platformInfo);

#endif
