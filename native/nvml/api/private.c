/* What the mock tells Mokka's own clients beyond NVML's API (mokka_private.h).
 *
 * Our nvidia-smi, check-fabric and `mokka ctl` read every reading through
 * NVML, as NVIDIA's tools do. Two facts have no NVML call: where this node's
 * files are (ctl writes the overrides and the Xid events there), and which
 * GPU of the profile a visible index is, even when that GPU is lost and NVML
 * refuses its handle (ctl must still be able to reset it). Both are answered
 * for the node nvmlInit published, with no handle needed. The mock CUDA
 * driver reads the board through NVML too; what NVML's API has no call for
 * (the L2 cache, the per-multiprocessor limits, the multiprocessor count
 * outside MIG) it reads from the GPU's `cuda` block here. Its process records
 * are processes.c's.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "mig/mig.h"
#include "mokka_private.h"

/* which: MOKKA_NODE_PATH_PROFILE (the profile in use), _OVERRIDES (the overrides
 * directory), _XID_EVENTS (the Xid events document); absolute paths. */
nvmlReturn_t nvmlMokkaGetNodePath(unsigned int which, char *path, unsigned int length)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!path)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_node *n = mock_node();
    char events[MOCK_PATH_MAX];
    const char *value = NULL;
    if (which == MOKKA_NODE_PATH_PROFILE)
        value = n->config_yaml;
    else if (which == MOKKA_NODE_PATH_OVERRIDES)
        value = n->overrides_dir;
    else if (which == MOKKA_NODE_PATH_XID_EVENTS && mock_xid_events_path(events, sizeof events))
        value = events;
    if (!value)
        return NVML_ERROR_INVALID_ARGUMENT;
    return api_copy_string(value, path, length);
}

/* The physical index (the profile's order, what the overrides are keyed by) and
 * the UUID the profile gives visible GPU `index`, lost or not. */
nvmlReturn_t nvmlMokkaGetDeviceIdentity(unsigned int index, unsigned int *physicalIndex, char *uuid,
                                        unsigned int length)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    const struct mock_node *n = mock_node();
    if (!physicalIndex || !uuid || index >= n->nvisible)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_gpu *g = &n->gpus[n->visible[index]];
    char value[MOCK_VALUE_MAX] = "";
    if (gpu_str(g, K_UUID, value, sizeof value) != 1)
        value[0] = '\0';
    ret = api_copy_string(value, uuid, length);
    if (ret == NVML_SUCCESS)
        *physicalIndex = g->phys;
    return ret;
}

/* `key` must name a value of the `cuda` block: this call reads nothing else. */
nvmlReturn_t nvmlMokkaGetDeviceCudaValue(nvmlDevice_t device, const char *key, long long *value)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    static const char block[] = K_CUDA ".";
    if (!key || !value || strncmp(key, block, sizeof block - 1) != 0 || !key[sizeof block - 1] ||
        strchr(key + sizeof block - 1, '.'))
        return NVML_ERROR_INVALID_ARGUMENT;
    long long v;
    if (!gpu_i64(g, key, &v))
        return NVML_ERROR_NOT_SUPPORTED;
    *value = v;
    return NVML_SUCCESS;
}

_Static_assert(MOKKA_MIG_PLACE_ROW == MIG_PLACE_ROW, "the private ABI's row is the MIG room's");

nvmlReturn_t nvmlMokkaMigPlaceGpuInstances(unsigned int nprofiles, const unsigned int *profiles, unsigned int count,
                                           const unsigned int *create, unsigned int *starts, unsigned int *placed)
{
    return mig_place_plan(nprofiles, profiles, count, create, starts, placed);
}
