/* Drain states: nvmlDeviceModifyDrainState and nvmlDeviceQueryDrainState, by PCI
 * address, held node-wide so every process and both nvidia-smis see one state.
 *
 * A drained GPU is a setting like those of NVML's setters: the line
 * `gpu.<physical index>.drain 1` of settings.nvml beside config.yaml
 * (../engine/settings.c, names.SETTINGS_STATE_*), which the library alone writes, under
 * the directory's lock, and reads strictly (anything a workload put there is refused
 * whole). Leaving the drain state drops the line; a GPU reset drops it with the GPU's
 * other settings (reset.c), as the reset re-initializes the GPU; the agent removes the
 * file at boot, as a reboot loses the driver's state.
 *
 * NVML's rules: changing the state is an administrator's (NO_PERMISSION otherwise);
 * entering it needs persistence mode off (IN_USE otherwise: "Persistence mode must be
 * disabled to perform this function", nvidia-smi drain -h).
 */
#include <unistd.h>

#include "api.h"

/* The GPU this process sees at `pci`'s domain, bus and device, or NULL. */
static const struct mock_gpu *gpu_at(const struct mock_node *n, const nvmlPciInfo_t *pci)
{
    for (unsigned int i = 0; i < n->nvisible; i++) {
        const struct mock_gpu *g = &n->gpus[n->visible[i]];
        unsigned long long domain, bus, device;
        if (gpu_u64(g, K_PCI_DOMAIN, &domain) && gpu_u64(g, K_PCI_BUS, &bus) && gpu_u64(g, K_PCI_DEVICE, &device) &&
            domain == pci->domain && bus == pci->bus && device == pci->device)
            return g;
    }
    return NULL;
}

static int drained(const struct mock_node *n, const struct mock_gpu *g)
{
    struct gpu_settings s;
    settings_get(n, g->phys, &s);
    return s.drain == 1;
}

static nvmlReturn_t drain_edit(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    s->drain = *(const int *)arg ? 1 : -1;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceQueryDrainState (nvmlPciInfo_t *pciInfo, nvmlEnableState_t *currentState)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    const struct mock_gpu *g = n && pciInfo ? gpu_at(n, pciInfo) : NULL;
    if (!g || !currentState)
        return NVML_ERROR_INVALID_ARGUMENT;
    *currentState = drained(n, g) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceModifyDrainState (nvmlPciInfo_t *pciInfo, nvmlEnableState_t newState)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    const struct mock_gpu *g = n && pciInfo ? gpu_at(n, pciInfo) : NULL;
    if (!g || (newState != NVML_FEATURE_ENABLED && newState != NVML_FEATURE_DISABLED))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (geteuid() != 0)
        return NVML_ERROR_NO_PERMISSION;
    nvmlEnableState_t persistence;
    if (newState == NVML_FEATURE_ENABLED &&
        nvmlDeviceGetPersistenceMode(mock_handle_of(g), &persistence) == NVML_SUCCESS &&
        persistence == NVML_FEATURE_ENABLED)
        return NVML_ERROR_IN_USE;
    int enter = newState == NVML_FEATURE_ENABLED;
    return settings_change(n, g->phys, drain_edit, &enter);
}
