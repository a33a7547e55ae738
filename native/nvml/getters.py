"""The NVML getters that answer with one state key: (nvml.h's prototype, shape, key).

native/nvml/gen_getters.py writes ``getters.c`` from this table at build time
(never committed), and native/nvml/gen_stubs.py stubs none of these names. The
body of each is one call of native/nvml/api/api.c, which checks nvmlInit, the
handle and the output pointers and answers NOT_SUPPORTED when no layer has the
key:

    shape          parameters after the device        call
    u32            unsigned int *out                   api_u32 (more than 32 bits: NOT_SUPPORTED)
    u64            unsigned long long *out             api_u64
    enabled        nvmlEnableState_t *out              api_enabled (true/enabled, false/disabled)
    string         char *buf, unsigned int length      api_string (N/A: NOT_SUPPORTED)
    string[SIZE]   char *buf of SIZE bytes             api_string

The build checks each prototype against nvml.h (whitespace aside), its
parameters against the shape and the key against mokka/engine/statekeys.py. A
getter that does more than read its key is written by hand in native/nvml/api/*.c.
"""

GETTERS = (
    # --- identity ----------------------------------------------------------------------------
    ("nvmlReturn_t DECLDIR nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)",
     "string", "serial"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber, unsigned int length)",
     "string", "board_part_number"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *version, unsigned int length)",
     "string", "vbios_version"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char *version, unsigned int length)",
     "string", "inforom.image_version"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)",
     "u32", "minor_number"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetBoardId(nvmlDevice_t device, unsigned int *boardId)",
     "u32", "board_id"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetModuleId(nvmlDevice_t device, unsigned int *moduleId)",
     "u32", "platform.module_id"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int *numCores)",
     "u32", "num_gpu_cores"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetMemoryBusWidth(nvmlDevice_t device, unsigned int *busWidth)",
     "u32", "memory.memory_bus_width"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)",
     "u32", "numa_node"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetIrqNum(nvmlDevice_t device, unsigned int *irqNum)",
     "u32", "pci.irq"),
    # --- PCIe --------------------------------------------------------------------------------
    ("nvmlReturn_t DECLDIR nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen)",
     "u32", "pcie.max_link_gen"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGenDevice)",
     "u32", "pcie.gpu_max_link_gen"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth)",
     "u32", "pcie.max_link_width"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *currLinkGen)",
     "u32", "pcie.current_link_gen"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)",
     "u32", "pcie.current_link_width"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value)",
     "u32", "pcie.replay_counter"),
    # --- firmware and modes ------------------------------------------------------------------
    ("nvmlReturn_t DECLDIR nvmlDeviceGetGspFirmwareVersion(nvmlDevice_t device, char *version)",
     "string[NVML_GSP_FIRMWARE_VERSION_BUF_SIZE]", "gsp_firmware.version"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetDisplayMode(nvmlDevice_t device, nvmlEnableState_t *display)",
     "enabled", "display.mode"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetDisplayActive(nvmlDevice_t device, nvmlEnableState_t *isActive)",
     "enabled", "display.active"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)",
     "enabled", "persistence_mode"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetAccountingMode(nvmlDevice_t device, nvmlEnableState_t *mode)",
     "enabled", "accounting.mode"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device, unsigned int *bufferSize)",
     "u32", "accounting.buffer_size"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetDefaultEccMode(nvmlDevice_t device, nvmlEnableState_t *defaultMode)",
     "enabled", "ecc.default_mode"),
    # --- power and fans ----------------------------------------------------------------------
    ("nvmlReturn_t DECLDIR nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)",
     "u32", "power.current_draw_mw"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)",
     "u32", "power.enforced_limit_mw"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)",
     "u32", "power.enforced_limit_mw"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int *defaultLimit)",
     "u32", "power.default_limit_mw"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetPowerManagementMode(nvmlDevice_t device, nvmlEnableState_t *mode)",
     "enabled", "power.management_mode"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)",
     "u64", "power.total_energy_consumption_mj"),
    ("nvmlReturn_t DECLDIR nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int *numFans)",
     "u32", "fan.count"),
)
