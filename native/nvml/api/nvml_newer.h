/* Calls DCGM 4.6 makes that are newer than the nvml.h the build pins (12.4, driver 550):
 * declared here with NVIDIA's published layouts, which a consumer built against a newer
 * header passes, so they must match byte for byte. Each block names the NVML release
 * whose nvml.h first has it (nvml.h 12.9 and 13.x, as published in nvidia-nvml-dev).
 */
#ifndef MOKKA_NVML_NEWER_H
#define MOKKA_NVML_NEWER_H

#include <stddef.h>

#include <nvml.h>

#include "board_info.h"
#include "engine/visibility.h"

/* --- NVML 12.9: the thermal margin ------------------------------------------------------ */

typedef struct {
    unsigned int version;                     /* nvmlMarginTemperature_v1 */
    int marginTemperature;                    /* degrees C to the nearest slowdown */
} nvmlMarginTemperature_v1_t;
typedef nvmlMarginTemperature_v1_t nvmlMarginTemperature_t;
#define nvmlMarginTemperature_v1 NVML_STRUCT_VERSION(MarginTemperature, 1)

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetMarginTemperature(nvmlDevice_t device,
                                                               nvmlMarginTemperature_t *marginTempInfo);

/* --- NVML 12.9: system event sets (the driver bound to or unbound from a GPU) ------------ */

typedef struct nvmlSystemEventSet_st *nvmlSystemEventSet_t;

#define nvmlSystemEventTypeGpuDriverUnbind 0x0000000000000001LL
#define nvmlSystemEventTypeGpuDriverBind 0x0000000000000002LL

typedef struct {
    unsigned int version;                     /* nvmlSystemEventSetCreateRequest_v1 */
    nvmlSystemEventSet_t set;                 /* out */
} nvmlSystemEventSetCreateRequest_v1_t;
typedef nvmlSystemEventSetCreateRequest_v1_t nvmlSystemEventSetCreateRequest_t;
#define nvmlSystemEventSetCreateRequest_v1 NVML_STRUCT_VERSION(SystemEventSetCreateRequest, 1)

typedef struct {
    unsigned int version;                     /* nvmlSystemEventSetFreeRequest_v1 */
    nvmlSystemEventSet_t set;
} nvmlSystemEventSetFreeRequest_v1_t;
typedef nvmlSystemEventSetFreeRequest_v1_t nvmlSystemEventSetFreeRequest_t;
#define nvmlSystemEventSetFreeRequest_v1 NVML_STRUCT_VERSION(SystemEventSetFreeRequest, 1)

typedef struct {
    unsigned int version;                     /* nvmlSystemRegisterEventRequest_v1 */
    unsigned long long eventTypes;            /* nvmlSystemEventType* bits */
    nvmlSystemEventSet_t set;
} nvmlSystemRegisterEventRequest_v1_t;
typedef nvmlSystemRegisterEventRequest_v1_t nvmlSystemRegisterEventRequest_t;
#define nvmlSystemRegisterEventRequest_v1 NVML_STRUCT_VERSION(SystemRegisterEventRequest, 1)

typedef struct {
    unsigned long long eventType;
    unsigned int gpuId;                       /* the GPU's PCI id */
} nvmlSystemEventData_v1_t;

typedef struct {
    unsigned int version;                     /* nvmlSystemEventSetWaitRequest_v1 */
    unsigned int timeoutms;                   /* 0: do not wait */
    nvmlSystemEventSet_t set;
    nvmlSystemEventData_v1_t *data;           /* the caller's array of dataSize */
    unsigned int dataSize;
    unsigned int numEvent;                    /* out */
} nvmlSystemEventSetWaitRequest_v1_t;
typedef nvmlSystemEventSetWaitRequest_v1_t nvmlSystemEventSetWaitRequest_t;
#define nvmlSystemEventSetWaitRequest_v1 NVML_STRUCT_VERSION(SystemEventSetWaitRequest, 1)

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlSystemEventSetCreate(nvmlSystemEventSetCreateRequest_t *request);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlSystemEventSetFree(nvmlSystemEventSetFreeRequest_t *request);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlSystemRegisterEvents(nvmlSystemRegisterEventRequest_t *request);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlSystemEventSetWait(nvmlSystemEventSetWaitRequest_t *request);

/* --- NVML 12.9 (Get, Set, Clear) and 13.0 (Update): workload power profiles, Blackwell on -- */

#define NVML_WORKLOAD_POWER_MAX_PROFILES 255

typedef struct {
    unsigned int mask[8];                     /* 255 bits, bit i of word i / 32 */
} nvmlMask255_t;

typedef struct {
    unsigned int version;                     /* nvmlWorkloadPowerProfileInfo_v1 */
    unsigned int profileId;
    unsigned int priority;
    nvmlMask255_t conflictingMask;
} nvmlWorkloadPowerProfileInfo_v1_t;
typedef nvmlWorkloadPowerProfileInfo_v1_t nvmlWorkloadPowerProfileInfo_t;

typedef struct {
    unsigned int version;                     /* nvmlWorkloadPowerProfileProfilesInfo_v1 */
    nvmlMask255_t perfProfilesMask;
    nvmlWorkloadPowerProfileInfo_t perfProfile[NVML_WORKLOAD_POWER_MAX_PROFILES];
} nvmlWorkloadPowerProfileProfilesInfo_v1_t;
typedef nvmlWorkloadPowerProfileProfilesInfo_v1_t nvmlWorkloadPowerProfileProfilesInfo_t;
#define nvmlWorkloadPowerProfileProfilesInfo_v1 NVML_STRUCT_VERSION(WorkloadPowerProfileProfilesInfo, 1)

typedef struct {
    unsigned int version;                     /* nvmlWorkloadPowerProfileCurrentProfiles_v1 */
    nvmlMask255_t perfProfilesMask;
    nvmlMask255_t requestedProfilesMask;
    nvmlMask255_t enforcedProfilesMask;
} nvmlWorkloadPowerProfileCurrentProfiles_v1_t;
typedef nvmlWorkloadPowerProfileCurrentProfiles_v1_t nvmlWorkloadPowerProfileCurrentProfiles_t;
#define nvmlWorkloadPowerProfileCurrentProfiles_v1 NVML_STRUCT_VERSION(WorkloadPowerProfileCurrentProfiles, 1)

typedef struct {
    unsigned int version;                     /* nvmlWorkloadPowerProfileRequestedProfiles_v1 */
    nvmlMask255_t requestedProfilesMask;
} nvmlWorkloadPowerProfileRequestedProfiles_v1_t;
typedef nvmlWorkloadPowerProfileRequestedProfiles_v1_t nvmlWorkloadPowerProfileRequestedProfiles_t;
#define nvmlWorkloadPowerProfileRequestedProfiles_v1 NVML_STRUCT_VERSION(WorkloadPowerProfileRequestedProfiles, 1)

typedef struct {                              /* no version word */
    unsigned int operation;                   /* nvmlPowerProfileOperation_t: clear, set, overwrite */
    nvmlMask255_t updateProfilesMask;
} nvmlWorkloadPowerProfileUpdateProfiles_v1_t;

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileGetProfilesInfo(
    nvmlDevice_t device, nvmlWorkloadPowerProfileProfilesInfo_t *profilesInfo);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileGetCurrentProfiles(
    nvmlDevice_t device, nvmlWorkloadPowerProfileCurrentProfiles_t *currentProfiles);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileSetRequestedProfiles(
    nvmlDevice_t device, nvmlWorkloadPowerProfileRequestedProfiles_t *requestedProfiles);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileClearRequestedProfiles(
    nvmlDevice_t device, nvmlWorkloadPowerProfileRequestedProfiles_t *requestedProfiles);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceWorkloadPowerProfileUpdateProfiles_v1(
    nvmlDevice_t device, nvmlWorkloadPowerProfileUpdateProfiles_v1_t *updateProfiles);

/* --- NVML 13.0: PRM register access (NVLink ports), Blackwell on ------------------------ */

#define NVML_PRM_DATA_MAX_SIZE 496

typedef struct {
    unsigned int dataSize;                    /* of the TLV input */
    unsigned int status;                      /* out */
    union {
        unsigned char inData[NVML_PRM_DATA_MAX_SIZE];
        unsigned char outData[NVML_PRM_DATA_MAX_SIZE];
    };
} nvmlPRMTLV_v1_t;

typedef struct {
    unsigned int localPort;
} nvmlPRMCounterInput_v1_t;

typedef struct {
    nvmlReturn_t status;
    nvmlValueType_t outputType;
    nvmlValue_t outputValue;
} nvmlPRMCounterValue_v1_t;

typedef struct {
    unsigned int counterId;                   /* nvmlPRMCounterId_t */
    nvmlPRMCounterInput_v1_t inData;
    nvmlPRMCounterValue_v1_t counterValue;
} nvmlPRMCounter_v1_t;

typedef struct {
    unsigned int numCounters;
    nvmlPRMCounter_v1_t *counters;
} nvmlPRMCounterList_v1_t;

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceReadWritePRM_v1(nvmlDevice_t device, nvmlPRMTLV_v1_t *buffer);
MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceReadPRMCounters_v1(nvmlDevice_t device,
                                                             nvmlPRMCounterList_v1_t *counterList);

/* --- the unrepairable-memory flag by the name DCGM 4.6 resolves (board_info.h has _v1) -- */

typedef nvmlUnrepairableMemoryStatus_v1_t nvmlUnrepairableMemoryStatus_t;

MOKKA_EXPORT nvmlReturn_t DECLDIR nvmlDeviceGetUnrepairableMemoryFlag(nvmlDevice_t device,
                                                                    nvmlUnrepairableMemoryStatus_t *status);

_Static_assert(sizeof(nvmlMarginTemperature_v1_t) == 8 && sizeof(nvmlSystemEventSetWaitRequest_v1_t) == 32 &&
               sizeof(nvmlSystemRegisterEventRequest_v1_t) == 24 && sizeof(nvmlMask255_t) == 32 &&
               sizeof(nvmlWorkloadPowerProfileInfo_v1_t) == 44 &&
               sizeof(nvmlWorkloadPowerProfileCurrentProfiles_v1_t) == 100 &&
               sizeof(nvmlWorkloadPowerProfileUpdateProfiles_v1_t) == 36 && sizeof(nvmlPRMTLV_v1_t) == 504,
               "NVIDIA's layouts");

#endif
