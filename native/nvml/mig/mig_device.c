/* MIG device handles: one per (GPU, GPU instance, compute instance), valid while
 * that compute instance exists and this process sees it (mig_view.c), and what
 * they answer: which MIG device they are, its parent, its name, UUID, memory and
 * attributes. Queries of a whole GPU that a MIG device answers with its
 * parent's value (PCI, architecture, compute capability) take mig_gpu_or_parent;
 * every other query refuses a MIG handle with NOT_SUPPORTED (mig_refuse, through
 * the engine's mock_gpu_of). nvmlDeviceGetName and nvmlDeviceGetUUID, which answer
 * both kinds of handle, are the API's (../api/device.c).
 *
 * MIG devices are numbered under their parent by GPU instance id, then compute
 * instance id: the largest instances first, as nvidia-smi -L lists them.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mig.h"

#define MIB (1024ull * 1024ull)

static struct nvmlDevice_st mig_handles[MOCK_MAX_GPUS][MIG_GI_IDS][MIG_CI_IDS];

nvmlDevice_t mig_device_handle(unsigned int phys, unsigned int gi, unsigned int ci)
{
    return &mig_handles[phys][gi][ci];
}

int mig_handle_ids(nvmlDevice_t device, unsigned int *phys, unsigned int *gi, unsigned int *ci)
{
    uintptr_t at = (uintptr_t)device, first = (uintptr_t)&mig_handles[0][0][0];
    if (!device || at < first || at >= first + sizeof mig_handles || (at - first) % sizeof mig_handles[0][0][0])
        return 0;
    uintptr_t i = (at - first) / sizeof mig_handles[0][0][0];
    *ci = (unsigned int)(i % MIG_CI_IDS);
    *gi = (unsigned int)(i / MIG_CI_IDS % MIG_GI_IDS);
    *phys = (unsigned int)(i / MIG_CI_IDS / MIG_GI_IDS);
    return 1;
}

const struct mock_gpu *mig_visible_gpu(const struct mock_node *n, unsigned int phys)
{
    if (phys >= n->count)
        return NULL;
    const struct mock_gpu *g = &n->gpus[phys];
    return g->index < n->nvisible && n->visible[g->index] == phys ? g : NULL;
}

nvmlReturn_t mig_device_of(nvmlDevice_t device, struct mig_device *out)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    unsigned int phys, gi, ci;
    struct mig_gpu st;
    if (!mig_handle_ids(device, &phys, &gi, &ci))
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_gpu *g = mig_visible_gpu(n, phys);
    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mock_gpu_lost(g))
        return NVML_ERROR_GPU_IS_LOST;
    if (!mig_gpu_get(n, phys, &st) || !st.current || !mig_view_sees(n, phys, gi, ci))
        return NVML_ERROR_INVALID_ARGUMENT;
    int at = mig_gi_find(&st, gi);
    int cat = at < 0 ? -1 : mig_ci_find(&st.gi[at], ci);
    if (cat < 0)
        return NVML_ERROR_INVALID_ARGUMENT;       /* destroyed since the handle was given */
    out->parent = g;
    out->gi = st.gi[at];
    out->ci = st.gi[at].ci[cat];
    out->table = mig_table(n, phys);
    return NVML_SUCCESS;
}

nvmlReturn_t mig_refuse(nvmlDevice_t device)
{
    struct mig_device d;
    nvmlReturn_t ret = mig_device_of(device, &d);
    return ret == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : ret;
}

nvmlReturn_t mig_not_a_mig_device(nvmlDevice_t device)
{
    nvmlReturn_t ret = mock_check_device(device);
    return ret == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : ret;
}

nvmlReturn_t mig_gpu_or_parent(nvmlDevice_t device, const struct mock_gpu **g)
{
    struct mig_device d;
    unsigned int phys, gi, ci;
    if (!mig_handle_ids(device, &phys, &gi, &ci))
        return mock_gpu_of(device, g);
    nvmlReturn_t ret = mig_device_of(device, &d);
    if (ret == NVML_SUCCESS)
        *g = d.parent;
    return ret;
}

nvmlReturn_t mig_check_any(nvmlDevice_t device)
{
    const struct mock_gpu *g;
    return mig_gpu_or_parent(device, &g);
}

/* The MIG devices of physical GPU `phys` this process sees, in index order: how many. */
static unsigned int devices_of(const struct mock_node *n, unsigned int phys, const struct mig_gpu *st,
                               unsigned char (*ids)[2], unsigned int cap)
{
    unsigned int count = 0;
    for (unsigned int i = 0; i < st->ngi; i++)
        for (unsigned int c = 0; c < st->gi[i].nci; c++)
            if (mig_view_sees(n, phys, st->gi[i].id, st->gi[i].ci[c].id) && count < cap) {
                ids[count][0] = st->gi[i].id;
                ids[count][1] = st->gi[i].ci[c].id;
                count++;
            }
    return count;
}

void mig_device_name(const struct mig_device *d, char *out, size_t size)
{
    char parent[MOCK_VALUE_MAX] = "";
    gpu_str(d->parent, K_NAME, parent, sizeof parent);
    const struct mig_gi_profile *p = &d->table->gi[d->gi.profile];
    const struct mig_ci_profile *c = &p->ci[d->ci.profile];
    snprintf(out, size, "%s MIG %s", parent, c->name[0] ? c->name : p->name);
}

/* --- the calls ---------------------------------------------------------------------- */

nvmlReturn_t DECLDIR nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    const struct mock_gpu *g;
    struct mig_gpu st;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_table *t = mig_table(g->node, g->phys);
    if (!t || !mig_gpu_get(g->node, g->phys, &st))
        return NVML_ERROR_NOT_SUPPORTED;
    *count = st.current ? t->max_devices : 0;     /* nvml.h: zero while MIG is disabled */
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                         nvmlDevice_t *migDevice)
{
    const struct mock_gpu *g;
    struct mig_gpu st;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!migDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_table *t = mig_table(g->node, g->phys);
    if (!t || !mig_gpu_get(g->node, g->phys, &st))
        return NVML_ERROR_NOT_SUPPORTED;
    if (index >= t->max_devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned char ids[MIG_MAX_GIS * MIG_CI_IDS][2];
    unsigned int count = st.current ? devices_of(g->node, g->phys, &st, ids, MIG_MAX_GIS * MIG_CI_IDS) : 0;
    if (index >= count)
        return NVML_ERROR_NOT_FOUND;
    *migDevice = mig_device_handle(g->phys, ids[index][0], ids[index][1]);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    unsigned int phys, gi, ci;
    int mig = mig_handle_ids(device, &phys, &gi, &ci);
    nvmlReturn_t ret = mig ? mig_check_any(device) : mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!isMigDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = (unsigned int)mig;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
    struct mig_device d;
    nvmlReturn_t ret = mig_device_of(migDevice, &d);
    if (ret != NVML_SUCCESS)
        return ret == NVML_ERROR_INVALID_ARGUMENT ? mig_not_a_mig_device(migDevice) : ret;
    if (!device)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = mock_handle_of(d.parent);
    return NVML_SUCCESS;
}

/* The two ids of a MIG device; a whole GPU has none. */
static nvmlReturn_t instance_id(nvmlDevice_t device, unsigned int *id, int compute)
{
    struct mig_device d;
    nvmlReturn_t ret = mig_device_of(device, &d);
    if (ret != NVML_SUCCESS)
        return ret == NVML_ERROR_INVALID_ARGUMENT ? mig_not_a_mig_device(device) : ret;
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = compute ? d.ci.id : d.gi.id;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    return instance_id(device, id, 0);
}

nvmlReturn_t DECLDIR nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    return instance_id(device, id, 1);
}

nvmlReturn_t mig_handle_by_uuid(const char *uuid, nvmlDevice_t *device)
{
    const struct mock_node *n = mock_node();
    for (unsigned int v = 0; v < n->nvisible; v++) {
        unsigned int phys = n->visible[v];
        struct mig_gpu st;
        if (!mig_gpu_get(n, phys, &st) || !st.current)
            continue;
        unsigned char ids[MIG_MAX_GIS * MIG_CI_IDS][2];
        unsigned int count = devices_of(n, phys, &st, ids, MIG_MAX_GIS * MIG_CI_IDS);
        for (unsigned int i = 0; i < count; i++) {
            char text[MIG_UUID_SIZE];
            if (mig_uuid(&n->gpus[phys], ids[i][0], ids[i][1], text) && strcasecmp(text, uuid) == 0) {
                if (mock_gpu_lost(&n->gpus[phys]))
                    return NVML_ERROR_GPU_IS_LOST;
                *device = mig_device_handle(phys, ids[i][0], ids[i][1]);
                return NVML_SUCCESS;
            }
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

int mig_index(nvmlDevice_t device, nvmlReturn_t *ret, unsigned int *index)
{
    struct mig_device d;
    unsigned int phys, gi, ci;
    if (!mig_handle_ids(device, &phys, &gi, &ci))
        return 0;
    if ((*ret = mig_device_of(device, &d)) != NVML_SUCCESS)
        return 1;
    if (!index) {
        *ret = NVML_ERROR_INVALID_ARGUMENT;
        return 1;
    }
    struct mig_gpu st;
    unsigned char ids[MIG_MAX_GIS * MIG_CI_IDS][2];
    mig_gpu_get(d.parent->node, phys, &st);
    unsigned int count = devices_of(d.parent->node, phys, &st, ids, MIG_MAX_GIS * MIG_CI_IDS);
    for (unsigned int i = 0; i < count; i++)
        if (ids[i][0] == gi && ids[i][1] == ci)
            *index = i;
    return 1;
}

/* MIG memory: what the GPU instance's profile declares, none of it in use. */
int mig_memory(nvmlDevice_t device, nvmlReturn_t *ret, unsigned long long *total)
{
    struct mig_device d;
    unsigned int phys, gi, ci;
    if (!mig_handle_ids(device, &phys, &gi, &ci))
        return 0;
    *ret = mig_device_of(device, &d);
    if (*ret == NVML_SUCCESS)
        *total = d.table->gi[d.gi.profile].memory_mib * MIB;
    return 1;
}

static nvmlReturn_t attributes(nvmlDevice_t device, nvmlDeviceAttributes_t *a)
{
    struct mig_device d;
    nvmlReturn_t ret = mig_device_of(device, &d);
    if (ret != NVML_SUCCESS)
        return ret == NVML_ERROR_INVALID_ARGUMENT ? mig_not_a_mig_device(device) : ret;
    if (!a)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mig_gi_profile *p = &d.table->gi[d.gi.profile];
    const struct mig_ci_profile *c = &p->ci[d.ci.profile];
    memset(a, 0, sizeof *a);
    a->multiprocessorCount = c->multiprocessors;
    a->sharedCopyEngineCount = p->copy_engines;
    a->sharedDecoderCount = p->decoders;
    a->sharedEncoderCount = p->encoders;
    a->sharedJpegCount = p->jpegs;
    a->sharedOfaCount = p->ofas;
    a->gpuInstanceSliceCount = p->slices;
    a->computeInstanceSliceCount = c->slices;
    a->memorySizeMB = p->memory_mib;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes_)
{
    return attributes(device, attributes_);
}

nvmlReturn_t DECLDIR nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes_)
{
    return attributes(device, attributes_);
}
