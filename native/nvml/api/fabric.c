/* GPU fabric (NVLink domain) identity and state: nvmlDeviceGetGpuFabricInfo[V].
 * The state's fabric block (the topology document applied at compile) and `state: auto`
 * (node.c), and its health: the flags, and a summary the profile gives or that
 * follows from them (unhealthy routes or a wrong configuration: unhealthy;
 * any other flag: limited capacity; else healthy). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api.h"

/* Health fields newer than this nvml.h: 2 bits each, TRUE 1, FALSE 2. */
#define HEALTH_TRUE 1u
#define HEALTH_FALSE 2u
#define SHIFT_DEGRADED_BW 0
#define SHIFT_ROUTE_RECOVERY 2
#define SHIFT_ROUTE_UNHEALTHY 4
#define SHIFT_ACCESS_TIMEOUT_RECOVERY 6
#define SHIFT_INCORRECT_CONFIGURATION 8
#define SHIFT_PARTITION_ASSIGNED 12               /* NVML 13 */
#define SUMMARY_HEALTHY 1
#define SUMMARY_UNHEALTHY 2
#define SUMMARY_LIMITED_CAPACITY 3

/* nvmlGpuFabricInfo_v3_t of later headers: v2 plus a health summary byte. */
struct fabric_info_v3 {
    nvmlGpuFabricInfo_v2_t v2;
    unsigned char healthSummary;
};
#define FABRIC_INFO_V3 ((unsigned int)(sizeof(struct fabric_info_v3) | (3u << 24)))

struct fabric {
    unsigned char uuid[NVML_GPU_FABRIC_UUID_LEN];
    unsigned int clique;
    unsigned char state;
    unsigned int health;
    unsigned char summary;
};

static void parse_uuid(const char *text, unsigned char out[NVML_GPU_FABRIC_UUID_LEN])
{
    unsigned char bytes[NVML_GPU_FABRIC_UUID_LEN] = {0};
    unsigned int nibbles = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '-')
            continue;
        if (!isxdigit((unsigned char)*p) || nibbles >= 2 * NVML_GPU_FABRIC_UUID_LEN)
            return;                               /* not a UUID: all zero */
        unsigned int v = isdigit((unsigned char)*p) ? (unsigned int)(*p - '0')
                                                    : (unsigned int)(tolower((unsigned char)*p) - 'a' + 10);
        bytes[nibbles / 2] = (unsigned char)(bytes[nibbles / 2] << 4 | v);
        nibbles++;
    }
    if (nibbles == 2 * NVML_GPU_FABRIC_UUID_LEN)
        memcpy(out, bytes, sizeof bytes);
}

static unsigned char state_code(const struct mock_gpu *g)
{
    char state[32] = "";
    if (gpu_raw(g, K_FABRIC_STATE, state, sizeof state) != 1 || !*state)
        snprintf(state, sizeof state, "%s", MOKKA_FABRIC_STATE_DEFAULT);
    if (strcasecmp(state, MOKKA_FABRIC_STATE_AUTO) == 0)
        snprintf(state, sizeof state, "%s", node_fabric_auto(g->node));
    if (strcasecmp(state, MOKKA_FABRIC_STATE_COMPLETED) == 0)
        return MOKKA_FABRIC_CODE_COMPLETED;
    if (strcasecmp(state, MOKKA_FABRIC_STATE_IN_PROGRESS) == 0)
        return MOKKA_FABRIC_CODE_IN_PROGRESS;
    if (strcasecmp(state, MOKKA_FABRIC_STATE_NOT_STARTED) == 0)
        return MOKKA_FABRIC_CODE_NOT_STARTED;
    return MOKKA_FABRIC_CODE_NOT_SUPPORTED;
}

/* The incorrect-configuration code of a word: 0 (not supported, N/A) for
 * not_supported, 1 (none) for anything unknown. */
static unsigned int incorrect_configuration(const char *v)
{
    if (strcasecmp(v, MOKKA_FABRIC_STATE_NOT_SUPPORTED) == 0)
        return 0;
    static const char *const names[] = {"none", "incorrect_sysguid", "incorrect_chassis_sn",
                                        "no_partition", "insufficient_nvlinks", "incompatible_gpu_fw",
                                        "invalid_location"};
    for (unsigned int i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(v, names[i]) == 0)
            return i + 1;
    return 1;
}

static void health_of(const struct mock_gpu *g, struct fabric *f)
{
    static const struct { const char *key; unsigned int shift; } flags[] = {
        {K_FABRIC_HEALTH_DEGRADED_BANDWIDTH, SHIFT_DEGRADED_BW},
        {K_FABRIC_HEALTH_ROUTE_RECOVERY, SHIFT_ROUTE_RECOVERY},
        {K_FABRIC_HEALTH_ROUTE_UNHEALTHY, SHIFT_ROUTE_UNHEALTHY},
        {K_FABRIC_HEALTH_ACCESS_TIMEOUT_RECOVERY, SHIFT_ACCESS_TIMEOUT_RECOVERY}};
    int set[4] = {0};
    char word[32];
    f->health = 0;
    for (unsigned int i = 0; i < 4; i++) {
        if (gpu_str(g, flags[i].key, word, sizeof word) == 1 && strcasecmp(word, MOKKA_FABRIC_STATE_NOT_SUPPORTED) == 0)
            continue;                             /* a board that reports no such flag: N/A */
        gpu_flag(g, flags[i].key, &set[i]);
        f->health |= (set[i] ? HEALTH_TRUE : HEALTH_FALSE) << flags[i].shift;
    }
    char v[64] = "none";
    if (gpu_str(g, K_FABRIC_HEALTH_INCORRECT_CONFIGURATION, v, sizeof v) != 1)
        snprintf(v, sizeof v, "none");
    unsigned int incorrect = incorrect_configuration(v);
    f->health |= incorrect << SHIFT_INCORRECT_CONFIGURATION;
    int assigned;                                 /* not said: 0, not supported */
    if (gpu_flag(g, K_FABRIC_HEALTH_PARTITION_ASSIGNED, &assigned))
        f->health |= (assigned ? HEALTH_TRUE : HEALTH_FALSE) << SHIFT_PARTITION_ASSIGNED;
    char summary[32] = "auto";
    gpu_raw(g, K_FABRIC_HEALTH_SUMMARY, summary, sizeof summary);
    if (strcasecmp(summary, "healthy") == 0)
        f->summary = SUMMARY_HEALTHY;
    else if (strcasecmp(summary, "unhealthy") == 0)
        f->summary = SUMMARY_UNHEALTHY;
    else if (strcasecmp(summary, "limited_capacity") == 0)
        f->summary = SUMMARY_LIMITED_CAPACITY;
    else if (strcasecmp(summary, MOKKA_FABRIC_STATE_NOT_SUPPORTED) == 0)
        f->summary = 0;
    else if (set[2] || incorrect > 1)             /* auto: from the flags */
        f->summary = SUMMARY_UNHEALTHY;
    else if (set[0] || set[1] || set[3])
        f->summary = SUMMARY_LIMITED_CAPACITY;
    else
        f->summary = SUMMARY_HEALTHY;
}

static nvmlReturn_t fabric_of(nvmlDevice_t device, struct fabric *f)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpu_has_prefix(g, K_FABRIC "."))
        return NVML_ERROR_NOT_SUPPORTED;          /* the profile has no fabric */
    memset(f, 0, sizeof *f);
    char uuid[MOCK_VALUE_MAX];
    if (gpu_str(g, K_FABRIC_CLUSTER_UUID, uuid, sizeof uuid) == 1)
        parse_uuid(uuid, f->uuid);
    unsigned long long clique = 0;
    gpu_u64(g, K_FABRIC_CLIQUE_ID, &clique);
    f->clique = (unsigned int)clique;
    f->state = state_code(g);
    health_of(g, f);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *gpuFabricInfo)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpuFabricInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct fabric f;
    if ((ret = fabric_of(device, &f)) != NVML_SUCCESS)
        return ret;
    memcpy(gpuFabricInfo->clusterUuid, f.uuid, sizeof f.uuid);
    gpuFabricInfo->status = NVML_SUCCESS;
    gpuFabricInfo->cliqueId = f.clique;
    gpuFabricInfo->state = f.state;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t *gpuFabricInfo)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpuFabricInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int version = gpuFabricInfo->version;
    if (version != nvmlGpuFabricInfo_v2 && version != FABRIC_INFO_V3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct fabric f;
    if ((ret = fabric_of(device, &f)) != NVML_SUCCESS)
        return ret;
    memcpy(gpuFabricInfo->clusterUuid, f.uuid, sizeof f.uuid);
    gpuFabricInfo->status = NVML_SUCCESS;
    gpuFabricInfo->cliqueId = f.clique;
    gpuFabricInfo->state = f.state;
    gpuFabricInfo->healthMask = f.health;
    if (version == FABRIC_INFO_V3)
        ((struct fabric_info_v3 *)(void *)gpuFabricInfo)->healthSummary = f.summary;
    return NVML_SUCCESS;
}
