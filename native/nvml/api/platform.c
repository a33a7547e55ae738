/* nvmlDeviceGetPlatformInfo: where the GPU sits in its rack, from the state's
 * `platform` block (gb200 and gb300 have one), which nvidia-smi -q prints as
 * "Platform Info". NOT_SUPPORTED without a location in the block, as on boards
 * whose platform reports none.
 *
 * Every field of NVML's struct is a byte or a byte string. A value that cannot
 * be one (a slot number of 300, a serial longer than 15 characters, a peer type
 * NVML has no code for) makes the call NOT_SUPPORTED, with one line on stderr
 * naming the key, rather than a truncated number.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "platform_info.h"

/* peerType codes. nvml.h describes the field as "switch present or not" and
 * names no values: a switch present reads 1, none 0 (nvidia-smi's "Switch
 * Connected" and "Direct Connected"). */
enum { PEER_DIRECT_CONNECTED = 0, PEER_SWITCH_CONNECTED = 1 };

/* The serial is NUL-terminated inside its 16 bytes (Blackwell's are 13). */
#define SERIAL_MAX (sizeof ((nvmlPlatformInfo_v2_t *)0)->chassisSerialNumber - 1)

/* The key, never its value: the state is written by whoever can write driver/config. */
static int unusable(const struct mock_gpu *g, const char *key, const char *fix)
{
    mock_warn_once("GPU %u: %s cannot be given by nvmlDeviceGetPlatformInfo: %s", g->phys, key, fix);
    return 0;
}

/* A key of the platform block as one byte; 0 when absent. */
static int byte_of(const struct mock_gpu *g, const char *key, unsigned char *out)
{
    char text[MOCK_VALUE_MAX];
    unsigned long long x;
    *out = 0;
    if (gpu_str(g, key, text, sizeof text) != 1)
        return 1;
    if (!gpu_u64(g, key, &x) || x > 255)
        return unusable(g, key, "set it to a whole number from 0 to 255");
    *out = (unsigned char)x;
    return 1;
}

static int serial_of(const struct mock_gpu *g, unsigned char out[16])
{
    char text[MOCK_VALUE_MAX];
    memset(out, 0, 16);
    if (gpu_str(g, K_PLATFORM_CHASSIS_SERIAL_NUMBER, text, sizeof text) != 1)
        return 1;
    size_t len = strlen(text);
    if (len > SERIAL_MAX)
        return unusable(g, K_PLATFORM_CHASSIS_SERIAL_NUMBER, "give at most 15 characters");
    memcpy(out, text, len);
    return 1;
}

static int peer_of(const struct mock_gpu *g, unsigned char *out)
{
    char text[64];
    *out = PEER_DIRECT_CONNECTED;
    if (gpu_str(g, K_PLATFORM_PEER_TYPE, text, sizeof text) != 1)
        return 1;
    if (strcasecmp(text, MOKKA_PLATFORM_PEER_SWITCH_CONNECTED) == 0)
        *out = PEER_SWITCH_CONNECTED;
    else if (strcasecmp(text, MOKKA_PLATFORM_PEER_DIRECT_CONNECTED) != 0)
        return unusable(g, K_PLATFORM_PEER_TYPE,
                        "set it to " MOKKA_PLATFORM_PEER_SWITCH_CONNECTED " or " MOKKA_PLATFORM_PEER_DIRECT_CONNECTED);
    return 1;
}

/* platform.gpu_fabric_guid, a 64-bit number, in ibGuid's first 8 bytes with the
 * most significant first, as a GUID is written; zero when absent. */
static int guid_of(const struct mock_gpu *g, unsigned char out[16])
{
    char text[MOCK_VALUE_MAX];
    unsigned long long guid;
    memset(out, 0, 16);
    if (gpu_str(g, K_PLATFORM_GPU_FABRIC_GUID, text, sizeof text) != 1)
        return 1;
    if (!gpu_u64(g, K_PLATFORM_GPU_FABRIC_GUID, &guid))
        return unusable(g, K_PLATFORM_GPU_FABRIC_GUID, "set it to a 64-bit number");
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(guid >> (56 - 8 * i));
    return 1;
}

static int platform_of(const struct mock_gpu *g, nvmlPlatformInfo_v2_t *p)
{
    return guid_of(g, p->ibGuid) && serial_of(g, p->chassisSerialNumber) &&
           byte_of(g, K_PLATFORM_SLOT_NUMBER, &p->slotNumber) && byte_of(g, K_PLATFORM_TRAY_INDEX, &p->trayIndex) &&
           byte_of(g, K_PLATFORM_HOST_ID, &p->hostId) && peer_of(g, &p->peerType) &&
           byte_of(g, K_PLATFORM_MODULE_ID, &p->moduleId);
}

/* Whether the block says where in a rack the GPU sits: a module id alone is what
 * nvmlDeviceGetModuleId answers on any multi-GPU board (an A100's HGX baseboard),
 * whose platform reports no location. */
static int in_a_rack(const struct mock_gpu *g)
{
    static const char *const keys[] = {K_PLATFORM_CHASSIS_SERIAL_NUMBER, K_PLATFORM_SLOT_NUMBER,
                                       K_PLATFORM_TRAY_INDEX, K_PLATFORM_HOST_ID, K_PLATFORM_PEER_TYPE,
                                       K_PLATFORM_GPU_FABRIC_GUID};
    char v[MOCK_VALUE_MAX];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (gpu_raw(g, keys[i], v, sizeof v) == 1)
            return 1;
    return 0;
}

nvmlReturn_t DECLDIR nvmlDeviceGetPlatformInfo(nvmlDevice_t device, nvmlPlatformInfo_t *platformInfo)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!platformInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int version = platformInfo->version;
    if (version != nvmlPlatformInfo_v1 && version != nvmlPlatformInfo_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlPlatformInfo_v2_t info;
    memset(&info, 0, sizeof info);
    info.version = version;
    if (!in_a_rack(g) || !platform_of(g, &info))
        return NVML_ERROR_NOT_SUPPORTED;
    memcpy(platformInfo, &info, sizeof info);    /* v1 names the same bytes (platform_info.h) */
    return NVML_SUCCESS;
}
