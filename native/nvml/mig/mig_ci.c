/* Compute instances within a GPU instance: their profiles (by NVML profile
 * index), placements and what is left, creating and destroying them, and listing
 * them. A compute instance is a MIG device (mig_device.c); a board holds at most
 * mig.max_gpu_instances of them.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "mig.h"

struct nvmlComputeInstance_st {
    unsigned char unused;
};

static struct nvmlComputeInstance_st ci_handles[MOCK_MAX_GPUS][MIG_GI_IDS][MIG_CI_IDS];

static nvmlComputeInstance_t ci_handle(unsigned int phys, unsigned int gi, unsigned int ci)
{
    return &ci_handles[phys][gi][ci];
}

struct ci_ref {
    struct mig_gi_ref gi;
    int at;                                       /* the compute instance's index in its GPU instance */
};

static nvmlReturn_t ci_of(nvmlComputeInstance_t handle, struct ci_ref *out)
{
    uintptr_t at = (uintptr_t)handle, first = (uintptr_t)&ci_handles[0][0][0];
    if (!handle || at < first || at >= first + sizeof ci_handles || (at - first) % sizeof ci_handles[0][0][0])
        return mock_require_init() == NVML_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    uintptr_t i = (at - first) / sizeof ci_handles[0][0][0];
    unsigned int ci = (unsigned int)(i % MIG_CI_IDS), gi = (unsigned int)(i / MIG_CI_IDS % MIG_GI_IDS);
    unsigned int phys = (unsigned int)(i / MIG_CI_IDS / MIG_GI_IDS);
    nvmlReturn_t ret = mig_gi_of(mig_gi_handle(phys, gi), &out->gi);
    if (ret != NVML_SUCCESS)
        return ret;
    out->at = mig_ci_find(&out->gi.st.gi[out->gi.at], ci);
    return out->at < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

static const struct mig_gi_profile *gi_profile(const struct mig_gi_ref *r)
{
    return &r->t->gi[r->st.gi[r->at].profile];
}

/* --- profiles ------------------------------------------------------------------------ */

static nvmlReturn_t profile_at(nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
                               struct mig_gi_ref *r, const struct mig_ci_profile **c)
{
    nvmlReturn_t ret = mig_gi_of(gpuInstance, r);
    if (ret != NVML_SUCCESS)
        return ret;
    if (profile >= MIG_CI_PROFILES || engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    *c = &gi_profile(r)->ci[profile];
    return (*c)->present ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

#define FILL_CI_PROFILE(info, p, c)                                                                      \
    do {                                                                                                 \
        (info)->id = (c)->id;                                                                            \
        (info)->sliceCount = (c)->slices;                                                                \
        (info)->instanceCount = (c)->instances;                                                          \
        (info)->multiprocessorCount = (c)->multiprocessors;                                              \
        (info)->sharedCopyEngineCount = (p)->copy_engines;                                               \
        (info)->sharedDecoderCount = (p)->decoders;                                                      \
        (info)->sharedEncoderCount = (p)->encoders;                                                      \
        (info)->sharedJpegCount = (p)->jpegs;                                                            \
        (info)->sharedOfaCount = (p)->ofas;                                                              \
    } while (0)

nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                  unsigned int engProfile,
                                                                  nvmlComputeInstanceProfileInfo_t *info)
{
    struct mig_gi_ref r;
    const struct mig_ci_profile *c;
    nvmlReturn_t ret = profile_at(gpuInstance, profile, engProfile, &r, &c);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(info, 0, sizeof *info);
    FILL_CI_PROFILE(info, gi_profile(&r), c);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                   unsigned int engProfile,
                                                                   nvmlComputeInstanceProfileInfo_v2_t *info)
{
    struct mig_gi_ref r;
    const struct mig_ci_profile *c;
    nvmlReturn_t ret = profile_at(gpuInstance, profile, engProfile, &r, &c);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!info || (info->version != nvmlComputeInstanceProfileInfo_v2 &&
                  info->version != nvmlComputeInstanceProfileInfo_v3))
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int version = info->version;
    if (version == nvmlComputeInstanceProfileInfo_v3)   /* v2 and a capabilities word, none of them set */
        memset(info, 0, sizeof(nvmlComputeInstanceProfileInfo_v3_t));
    else
        memset(info, 0, sizeof *info);
    info->version = version;
    FILL_CI_PROFILE(info, gi_profile(&r), c);
    mig_profile_name(c->name, info->name);
    return NVML_SUCCESS;
}

static nvmlReturn_t profile_by_id(nvmlGpuInstance_t gpuInstance, unsigned int id, struct mig_gi_ref *r,
                                  unsigned int *c)
{
    nvmlReturn_t ret = mig_gi_of(gpuInstance, r);
    if (ret != NVML_SUCCESS)
        return ret;
    int found = mig_ci_profile_by_id(gi_profile(r), id);
    if (found < 0)
        return NVML_ERROR_NOT_SUPPORTED;          /* nvml.h: a profile ID the GPU instance does not have */
    *c = (unsigned int)found;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance,
                                                                        unsigned int profileId, unsigned int *count)
{
    struct mig_gi_ref r;
    unsigned int c;
    nvmlReturn_t ret = profile_by_id(gpuInstance, profileId, &r, &c);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = mig_ci_capacity(r.t, &r.st.gi[r.at], c);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t gpuInstance,
                                                                         unsigned int profileId,
                                                                         nvmlComputeInstancePlacement_t *placements,
                                                                         unsigned int *count)
{
    struct mig_gi_ref r;
    unsigned int c, starts[MIG_MEMORY_SLICES];
    nvmlReturn_t ret = profile_by_id(gpuInstance, profileId, &r, &c);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = mig_ci_placements(gi_profile(&r), c, starts, MIG_MEMORY_SLICES);
    if (placements && *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int k = 0; placements && k < n; k++)
        placements[k] = (nvmlComputeInstancePlacement_t){starts[k], gi_profile(&r)->ci[c].slices};
    *count = n;
    return NVML_SUCCESS;
}

/* --- create and destroy ---------------------------------------------------------------- */

struct create {
    unsigned int gi, profile;
    int want;
    unsigned int id;
};

static unsigned int devices(const struct mig_gpu *gpu)
{
    unsigned int n = 0;
    for (unsigned int i = 0; i < gpu->ngi; i++)
        n += gpu->gi[i].nci;
    return n;
}

static nvmlReturn_t create(const struct mig_table *t, struct mig_gpu *gpu, void *arg)
{
    struct create *c = arg;
    int at = mig_gi_find(gpu, c->gi);
    unsigned int start;
    if (at < 0)
        return NVML_ERROR_INVALID_ARGUMENT;       /* its GPU instance went first */
    struct mig_gi *gi = &gpu->gi[at];
    if ((t->max_devices > 0 && devices(gpu) >= t->max_devices) || !mig_ci_place(t, gi, c->profile, c->want, &start))
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    int cat = mig_ci_add(gi, c->profile, start, t->gi[gi->profile].ci[c->profile].slices);
    if (cat < 0)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    c->id = gi->ci[cat].id;
    return NVML_SUCCESS;
}

static nvmlReturn_t create_at(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                              const nvmlComputeInstancePlacement_t *placement, int with_placement,
                              nvmlComputeInstance_t *computeInstance)
{
    struct mig_gi_ref r;
    struct create c = {.want = -1};
    nvmlReturn_t ret = profile_by_id(gpuInstance, profileId, &r, &c.profile);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!computeInstance || (with_placement && !placement))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (with_placement) {
        unsigned int starts[MIG_MEMORY_SLICES];
        unsigned int n = mig_ci_placements(gi_profile(&r), c.profile, starts, MIG_MEMORY_SLICES);
        int possible = 0;
        for (unsigned int k = 0; k < n; k++)
            possible |= starts[k] == placement->start;
        if (!possible || placement->size != gi_profile(&r)->ci[c.profile].slices)
            return NVML_ERROR_INVALID_ARGUMENT;
        c.want = (int)placement->start;
    }
    c.gi = r.st.gi[r.at].id;
    if ((ret = mig_gpu_change(r.g->node, r.g->phys, create, &c)) != NVML_SUCCESS)
        return ret;
    *computeInstance = ci_handle(r.g->phys, c.gi, c.id);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                          nvmlComputeInstance_t *computeInstance)
{
    return create_at(gpuInstance, profileId, NULL, 0, computeInstance);
}

nvmlReturn_t DECLDIR nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t gpuInstance,
                                                                       unsigned int profileId,
                                                                       const nvmlComputeInstancePlacement_t *placement,
                                                                       nvmlComputeInstance_t *computeInstance)
{
    return create_at(gpuInstance, profileId, placement, 1, computeInstance);
}

static nvmlReturn_t destroy(const struct mig_table *t, struct mig_gpu *gpu, void *arg)
{
    const unsigned int *ids = arg;
    (void)t;
    int at = mig_gi_find(gpu, ids[0]);
    int cat = at < 0 ? -1 : mig_ci_find(&gpu->gi[at], ids[1]);
    if (cat < 0)
        return NVML_ERROR_INVALID_ARGUMENT;       /* another process destroyed it first */
    mig_ci_remove(&gpu->gi[at], (unsigned int)cat);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    struct ci_ref r;
    nvmlReturn_t ret = ci_of(computeInstance, &r);
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mig_gi *gi = &r.gi.st.gi[r.gi.at];
    unsigned int ids[2] = {gi->id, gi->ci[r.at].id};
    return mig_gpu_change(r.gi.g->node, r.gi.g->phys, destroy, ids);
}

/* --- lists and info ------------------------------------------------------------------- */

nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                        nvmlComputeInstance_t *computeInstances, unsigned int *count)
{
    struct mig_gi_ref r;
    unsigned int c;
    nvmlReturn_t ret = profile_by_id(gpuInstance, profileId, &r, &c);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!computeInstances || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_gi *gi = &r.st.gi[r.at];
    unsigned int n = 0;                           /* the caller's room: the profile's instance count */
    for (unsigned int i = 0; i < gi->nci && n < gi_profile(&r)->ci[c].instances; i++)
        if (gi->ci[i].profile == c)
            computeInstances[n++] = ci_handle(r.g->phys, gi->id, gi->ci[i].id);
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                           nvmlComputeInstance_t *computeInstance)
{
    struct mig_gi_ref r;
    nvmlReturn_t ret = mig_gi_of(gpuInstance, &r);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!computeInstance || id >= MIG_CI_IDS)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig_ci_find(&r.st.gi[r.at], id) < 0)
        return NVML_ERROR_NOT_FOUND;
    *computeInstance = ci_handle(r.g->phys, r.st.gi[r.at].id, id);
    return NVML_SUCCESS;
}

/* v1 of the info has no placement: nvmlComputeInstanceGetInfo writes only the fields before it. */
static nvmlReturn_t info_of(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info, int placement)
{
    struct ci_ref r;
    nvmlReturn_t ret = ci_of(computeInstance, &r);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_gi *gi = &r.gi.st.gi[r.gi.at];
    const struct mig_ci *ci = &gi->ci[r.at];
    info->device = mock_handle_of(r.gi.g);
    info->gpuInstance = mig_gi_handle(r.gi.g->phys, gi->id);
    info->id = ci->id;
    info->profileId = gi_profile(&r.gi)->ci[ci->profile].id;
    if (placement)
        info->placement = (nvmlComputeInstancePlacement_t){ci->start, ci->size};
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)
{
    return info_of(computeInstance, info, 1);
}

nvmlReturn_t DECLDIR nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)
{
    return info_of(computeInstance, info, 0);
}
