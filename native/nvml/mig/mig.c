/* MIG mode, as the driver keeps it: a GPU whose board has a MIG table (mig_table.c)
 * is MIG-capable; every other answers NOT_SUPPORTED. A board that is MIG-capable but
 * whose partition table is not public (gb300: max_gpu_instances, no profiles) reads
 * Disabled, and enabling it is refused with NOT_SUPPORTED and one line saying why.
 *
 * A mode change is made as the driver makes it (nvml.h's nvmlDeviceSetMigMode): the
 * driver resets the GPU itself, so on a GPU no process holds the new mode is current
 * at once (activationStatus SUCCESS). On a GPU some process holds (the API room's
 * wrapper, ../api/mig_mode.c, says whether one does: a live CUDA process record of
 * the GPU or of one of its MIG devices) the driver cannot reset it: the mode is left
 * pending and activationStatus is IN_USE; the caller retries once the GPU is idle, or
 * resets it (`nvidia-smi -r`, reset.c), which makes a pending mode current.
 * RESET_REQUIRED, for platforms without a reset (pass-through VMs), is never answered.
 * Disabling MIG while GPU instances exist is refused with IN_USE. A reset also ends
 * every instance of the GPU.
 */
#define _GNU_SOURCE
#include <string.h>

#include "mig.h"

nvmlReturn_t mig_gpu_of(nvmlDevice_t device, int enabled, const struct mock_gpu **g, const struct mig_table **t,
                        struct mig_gpu *st)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    *t = mig_table((*g)->node, (*g)->phys);
    if (!*t || !mig_gpu_get((*g)->node, (*g)->phys, st) || (enabled && !st->current))
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

int mig_enabled(const struct mock_gpu *g)
{
    struct mig_gpu st;
    return mig_gpu_get(g->node, g->phys, &st) && st.current;
}

nvmlReturn_t DECLDIR nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((ret = mig_gpu_of(device, 0, &g, &t, &st)) != NVML_SUCCESS)
        return ret;
    *currentMode = st.current ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pendingMode = st.pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

struct set_mode {
    unsigned char mode;
    int busy;
    nvmlReturn_t activation;
};

static nvmlReturn_t set_mode(const struct mig_table *t, struct mig_gpu *gpu, void *arg)
{
    struct set_mode *s = arg;
    (void)t;
    if (s->mode == gpu->current) {
        gpu->pending = s->mode;                   /* a pending change taken back */
        s->activation = NVML_SUCCESS;
        return NVML_SUCCESS;
    }
    if (gpu->ngi > 0)
        return NVML_ERROR_IN_USE;
    gpu->pending = s->mode;
    if (s->busy) {                                /* no reset while a process holds it */
        s->activation = NVML_ERROR_IN_USE;
        return NVML_SUCCESS;
    }
    gpu->current = s->mode;                       /* the driver's own reset */
    s->activation = NVML_SUCCESS;
    return NVML_SUCCESS;
}

nvmlReturn_t mig_set_mode(nvmlDevice_t device, unsigned int mode, int busy, nvmlReturn_t *activationStatus)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!activationStatus || (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE))
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((ret = mig_gpu_of(device, 0, &g, &t, &st)) != NVML_SUCCESS)
        return ret;
    if (t->unpublished && mode == NVML_DEVICE_MIG_ENABLE) {
        mock_say("cannot enable MIG on GPU %u: its board's MIG partition table (the GPU instance profiles) "
                 "is not public, so its profile declares none and no GPU instance could be created",
                 g->phys);
        return NVML_ERROR_NOT_SUPPORTED;
    }
    struct set_mode s = {.mode = mode == NVML_DEVICE_MIG_ENABLE, .busy = busy};
    ret = mig_gpu_change(g->node, g->phys, set_mode, &s);
    if (ret == NVML_SUCCESS)
        *activationStatus = s.activation;
    return ret;
}

static nvmlReturn_t reset(const struct mig_table *t, struct mig_gpu *gpu, void *arg)
{
    (void)t, (void)arg;
    gpu->current = gpu->pending;
    gpu->ngi = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t mig_reset(const struct mock_node *n, unsigned int phys)
{
    struct mig_gpu st;
    if (!mig_gpu_get(n, phys, &st) || (st.current == st.pending && st.ngi == 0))
        return NVML_SUCCESS;                      /* nothing a reset changes */
    return mig_gpu_change(n, phys, reset, NULL);
}
