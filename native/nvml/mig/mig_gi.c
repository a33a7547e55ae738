/* GPU instances: the profiles a board offers (by NVML profile index), their
 * placements and what is left of them, creating and destroying instances, and
 * listing them. Where an instance goes and what is left are mig_rules.c's; a
 * change goes through mig_state.c, so every process on the node sees it.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mig.h"

struct nvmlGpuInstance_st {
    unsigned char unused;
};

static struct nvmlGpuInstance_st gi_handles[MOCK_MAX_GPUS][MIG_GI_IDS];

nvmlGpuInstance_t mig_gi_handle(unsigned int phys, unsigned int id)
{
    return &gi_handles[phys][id];
}

nvmlReturn_t mig_gi_of(nvmlGpuInstance_t handle, struct mig_gi_ref *out)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    uintptr_t at = (uintptr_t)handle, first = (uintptr_t)&gi_handles[0][0];
    if (!handle || at < first || at >= first + sizeof gi_handles || (at - first) % sizeof gi_handles[0][0])
        return NVML_ERROR_INVALID_ARGUMENT;
    uintptr_t i = (at - first) / sizeof gi_handles[0][0];
    unsigned int phys = (unsigned int)(i / MIG_GI_IDS), id = (unsigned int)(i % MIG_GI_IDS);
    const struct mock_node *n = mock_node();
    if (!(out->g = mig_visible_gpu(n, phys)))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mock_gpu_lost(out->g))
        return NVML_ERROR_GPU_IS_LOST;
    if (!(out->t = mig_table(n, phys)) || !mig_gpu_get(n, phys, &out->st) || !out->st.current ||
        (out->at = mig_gi_find(&out->st, id)) < 0)
        return NVML_ERROR_INVALID_ARGUMENT;       /* destroyed since the handle was given */
    return NVML_SUCCESS;
}

void mig_profile_name(const char *name, char out[NVML_DEVICE_NAME_V2_BUFFER_SIZE])
{
    snprintf(out, NVML_DEVICE_NAME_V2_BUFFER_SIZE, "MIG %s", name);
}

/* --- profiles ------------------------------------------------------------------------ */

static nvmlReturn_t profile_at(nvmlDevice_t device, unsigned int index, const struct mig_gi_profile **p)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    nvmlReturn_t ret = mig_gpu_of(device, 1, &g, &t, &st);
    if (ret != NVML_SUCCESS)
        return ret;
    if (index >= MIG_GI_PROFILES)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!t->gi[index].present)
        return NVML_ERROR_NOT_SUPPORTED;          /* a profile this board does not have */
    *p = &t->gi[index];
    return NVML_SUCCESS;
}

/* The fields every version of a GPU instance profile's info has, from profile p. */
#define FILL_GI_PROFILE(info, p)                                                                         \
    do {                                                                                                 \
        (info)->id = (p)->id;                                                                            \
        (info)->sliceCount = (p)->slices;                                                                \
        (info)->instanceCount = (p)->instances;                                                          \
        (info)->multiprocessorCount = (p)->multiprocessors;                                              \
        (info)->copyEngineCount = (p)->copy_engines;                                                     \
        (info)->decoderCount = (p)->decoders;                                                            \
        (info)->encoderCount = (p)->encoders;                                                            \
        (info)->jpegCount = (p)->jpegs;                                                                  \
        (info)->ofaCount = (p)->ofas;                                                                    \
        (info)->memorySizeMB = (p)->memory_mib;                                                          \
    } while (0)

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                         nvmlGpuInstanceProfileInfo_t *info)
{
    const struct mig_gi_profile *p;
    nvmlReturn_t ret = profile_at(device, profile, &p);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof *info);
    FILL_GI_PROFILE(info, p);
    info->isP2pSupported = (unsigned int)p->p2p;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                          nvmlGpuInstanceProfileInfo_v2_t *info)
{
    const struct mig_gi_profile *p;
    nvmlReturn_t ret = profile_at(device, profile, &p);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!info || (info->version != nvmlGpuInstanceProfileInfo_v2 && info->version != nvmlGpuInstanceProfileInfo_v3))
        return NVML_ERROR_INVALID_ARGUMENT;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    mig_profile_name(p->name, name);
    if (info->version == nvmlGpuInstanceProfileInfo_v3) {   /* v2's fields but isP2pSupported, then capabilities */
        nvmlGpuInstanceProfileInfo_v3_t *v3 = (nvmlGpuInstanceProfileInfo_v3_t *)info;
        memset(v3, 0, sizeof *v3);
        v3->version = nvmlGpuInstanceProfileInfo_v3;
        FILL_GI_PROFILE(v3, p);
        v3->capabilities = p->p2p ? NVML_GPU_INTSTANCE_PROFILE_CAPS_P2P : 0;
        memcpy(v3->name, name, sizeof name);
        return NVML_SUCCESS;
    }
    memset(info, 0, sizeof *info);
    info->version = nvmlGpuInstanceProfileInfo_v2;
    FILL_GI_PROFILE(info, p);
    info->isP2pSupported = (unsigned int)p->p2p;
    memcpy(info->name, name, sizeof name);
    return NVML_SUCCESS;
}

/* The profile with this id (what -lgip prints and the other calls take). */
static nvmlReturn_t profile_by_id(nvmlDevice_t device, unsigned int id, int enabled, const struct mock_gpu **g,
                                  const struct mig_table **t, struct mig_gpu *st, unsigned int *p)
{
    nvmlReturn_t ret = mig_gpu_of(device, enabled, g, t, st);
    if (ret != NVML_SUCCESS)
        return ret;
    int found = mig_gi_profile_by_id(*t, id);
    if (found < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *p = (unsigned int)found;
    return NVML_SUCCESS;
}

static nvmlReturn_t placements(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *out,
                               unsigned int *count)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    unsigned int p;
    nvmlReturn_t ret = profile_by_id(device, profileId, 0, &g, &t, &st, &p);   /* whatever the mode */
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_gi_profile *prof = &t->gi[p];
    if (out && *count < prof->nplacements) {
        *count = prof->nplacements;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int k = 0; out && k < prof->nplacements; k++)
        out[k] = (nvmlGpuInstancePlacement_t){prof->placement_start[k], prof->placement_size};
    *count = prof->nplacements;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                                   nvmlGpuInstancePlacement_t *placements_,
                                                                   unsigned int *count)
{
    return placements(device, profileId, placements_, count);
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstancePossiblePlacements(nvmlDevice_t device, unsigned int profileId,
                                                                nvmlGpuInstancePlacement_t *placements_,
                                                                unsigned int *count)
{
    return placements(device, profileId, placements_, count);
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                               unsigned int *count)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    unsigned int p;
    nvmlReturn_t ret = profile_by_id(device, profileId, 1, &g, &t, &st, &p);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = mig_gi_capacity(t, &st, p);
    return NVML_SUCCESS;
}

/* --- create and destroy ---------------------------------------------------------------- */

struct create {
    unsigned int profile;
    int want;                                     /* a start, or -1: wherever it fits best */
    unsigned int id;
};

static nvmlReturn_t create(const struct mig_table *t, struct mig_gpu *gpu, void *arg)
{
    struct create *c = arg;
    unsigned int start;
    if (!gpu->current)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!mig_gi_place(t, gpu, c->profile, c->want, &start))
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    int at = mig_gi_add(gpu, c->profile, start, t->gi[c->profile].placement_size);
    if (at < 0)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    c->id = gpu->gi[at].id;
    return NVML_SUCCESS;
}

static nvmlReturn_t create_at(nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,
                              int with_placement, nvmlGpuInstance_t *gpuInstance)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    struct create c = {.want = -1};
    nvmlReturn_t ret = profile_by_id(device, profileId, 1, &g, &t, &st, &c.profile);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpuInstance || (with_placement && !placement))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (with_placement) {
        const struct mig_gi_profile *p = &t->gi[c.profile];
        int possible = 0;
        for (unsigned int k = 0; k < p->nplacements; k++)
            possible |= p->placement_start[k] == placement->start;
        if (!possible || placement->size != p->placement_size)
            return NVML_ERROR_INVALID_ARGUMENT;
        c.want = (int)placement->start;
    }
    if ((ret = mig_gpu_change(g->node, g->phys, create, &c)) != NVML_SUCCESS)
        return ret;
    *gpuInstance = mig_gi_handle(g->phys, c.id);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                 nvmlGpuInstance_t *gpuInstance)
{
    return create_at(device, profileId, NULL, 0, gpuInstance);
}

nvmlReturn_t DECLDIR nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                              const nvmlGpuInstancePlacement_t *placement,
                                                              nvmlGpuInstance_t *gpuInstance)
{
    return create_at(device, profileId, placement, 1, gpuInstance);
}

static nvmlReturn_t destroy(const struct mig_table *t, struct mig_gpu *gpu, void *arg)
{
    (void)t;
    int at = mig_gi_find(gpu, *(unsigned int *)arg);
    if (at < 0)
        return NVML_ERROR_INVALID_ARGUMENT;       /* another process destroyed it first */
    if (gpu->gi[at].nci > 0)
        return NVML_ERROR_IN_USE;                 /* its compute instances first */
    mig_gi_remove(gpu, (unsigned int)at);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    struct mig_gi_ref r;
    nvmlReturn_t ret = mig_gi_of(gpuInstance, &r);
    if (ret != NVML_SUCCESS)
        return ret;
    unsigned int id = r.st.gi[r.at].id;
    return mig_gpu_change(r.g->node, r.g->phys, destroy, &id);
}

/* --- lists and info ------------------------------------------------------------------- */

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                               nvmlGpuInstance_t *gpuInstances, unsigned int *count)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    unsigned int p;
    nvmlReturn_t ret = profile_by_id(device, profileId, 1, &g, &t, &st, &p);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpuInstances || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = 0;                           /* the caller's room: the profile's instance count */
    for (unsigned int i = 0; i < st.ngi && n < t->gi[p].instances; i++)
        if (st.gi[i].profile == p)
            gpuInstances[n++] = mig_gi_handle(g->phys, st.gi[i].id);
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    nvmlReturn_t ret = mig_gpu_of(device, 1, &g, &t, &st);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpuInstance || id >= MIG_GI_IDS)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig_gi_find(&st, id) < 0)
        return NVML_ERROR_NOT_FOUND;
    *gpuInstance = mig_gi_handle(g->phys, id);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)
{
    struct mig_gi_ref r;
    nvmlReturn_t ret = mig_gi_of(gpuInstance, &r);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_gi *gi = &r.st.gi[r.at];
    info->device = mock_handle_of(r.g);
    info->id = gi->id;
    info->profileId = r.t->gi[gi->profile].id;
    info->placement = (nvmlGpuInstancePlacement_t){gi->start, gi->size};
    return NVML_SUCCESS;
}
