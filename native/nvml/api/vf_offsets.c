/* The clocks' VF offsets: how far the driver shifts a clock's voltage-frequency curve.
 * Each is 0 until a root caller sets one within the board's range
 * (+-names.CLOCK_VF_OFFSET_LIMIT_MHZ, INVALID_ARGUMENT past it); the offset is held
 * node-wide in settings.nvml (../engine/settings.c) like every setter's, so each process
 * and container reads it back, and a GPU reset drops it. A MIG device has none
 * (NOT_SUPPORTED, as mock_gpu_of answers for one).
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "api.h"
#include "mokka_private.h"

enum domain { GPC, MEM };

static nvmlReturn_t get_offset(nvmlDevice_t device, enum domain d, int *out)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct gpu_settings s;
    settings_get(g->node, g->phys, &s);
    *out = d == GPC ? s.gpc_vf_offset_mhz : s.mem_vf_offset_mhz;
    return NVML_SUCCESS;
}

static nvmlReturn_t get_range(nvmlDevice_t device, int *lo, int *hi)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!lo || !hi)
        return NVML_ERROR_INVALID_ARGUMENT;
    *lo = -MOKKA_CLOCK_VF_OFFSET_LIMIT_MHZ;
    *hi = MOKKA_CLOCK_VF_OFFSET_LIMIT_MHZ;
    return NVML_SUCCESS;
}

struct change {
    enum domain d;
    int mhz;
};

static nvmlReturn_t edit(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    const struct change *c = arg;
    *(c->d == GPC ? &s->gpc_vf_offset_mhz : &s->mem_vf_offset_mhz) = c->mhz;
    return NVML_SUCCESS;
}

static nvmlReturn_t set_offset(nvmlDevice_t device, enum domain d, int mhz)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (geteuid() != 0)
        return NVML_ERROR_NO_PERMISSION;
    if (mhz < -MOKKA_CLOCK_VF_OFFSET_LIMIT_MHZ || mhz > MOKKA_CLOCK_VF_OFFSET_LIMIT_MHZ)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct change c = {d, mhz};
    return settings_change(g->node, g->phys, edit, &c);
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpcClkVfOffset(nvmlDevice_t device, int *offset)
{
    return get_offset(device, GPC, offset);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMemClkVfOffset(nvmlDevice_t device, int *offset)
{
    return get_offset(device, MEM, offset);
}

nvmlReturn_t DECLDIR nvmlDeviceGetGpcClkMinMaxVfOffset(nvmlDevice_t device,
                                                       int *minOffset, int *maxOffset)
{
    return get_range(device, minOffset, maxOffset);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMemClkMinMaxVfOffset(nvmlDevice_t device,
                                                       int *minOffset, int *maxOffset)
{
    return get_range(device, minOffset, maxOffset);
}

nvmlReturn_t DECLDIR nvmlDeviceSetGpcClkVfOffset(nvmlDevice_t device, int offset)
{
    return set_offset(device, GPC, offset);
}

nvmlReturn_t DECLDIR nvmlDeviceSetMemClkVfOffset(nvmlDevice_t device, int offset)
{
    return set_offset(device, MEM, offset);
}
