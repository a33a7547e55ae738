/* NVLink: per-link state, version, capabilities and remote ends from the
 * state's nvlink_links; and the link count between two GPUs that
 * `nvidia-smi topo -m` prints as NV<n> (mokka/smi/topo.py). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api.h"

_Static_assert(MOKKA_MAX_NVLINK_LINKS == NVML_NVLINK_MAX_LINKS,
               "mokka/core/names.py MAX_NVLINK_LINKS must be what NVML allows");

/* The position in nvlink_links of link number `link`, or -1. */
static int link_slot(const struct mock_gpu *g, unsigned int link)
{
    unsigned int n = gpu_list_len(g, K_NVLINK_LINKS);
    for (unsigned int i = 0; i < n; i++) {
        char key[64];
        unsigned long long number = i;
        snprintf(key, sizeof key, K_NVLINK_LINKS_N_LINK, i);
        gpu_u64(g, key, &number);
        if (number == link)
            return (int)i;
    }
    return -1;
}

static nvmlReturn_t link_of(nvmlDevice_t device, unsigned int link, const void *out,
                            const struct mock_gpu **g, int *slot)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!out || link >= NVML_NVLINK_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    *slot = link_slot(*g, link);
    return *slot < 0 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

/* The text of a link's field: `field` is a key of mokka_keys.h taking the slot. */
static void link_field(const struct mock_gpu *g, int slot, const char *field, char *out, size_t size)
{
    char key[64];
    snprintf(key, sizeof key, field, (unsigned int)slot);
    if (gpu_raw(g, key, out, size) != 1)
        out[0] = '\0';
}

static int link_active(const struct mock_gpu *g, int slot)
{
    char state[32];
    link_field(g, slot, K_NVLINK_LINKS_N_STATE, state, sizeof state);
    return !*state || strcasecmp(state, MOKKA_NVLINK_STATE_ACTIVE) == 0;   /* active by default */
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive)
{
    const struct mock_gpu *g;
    int slot;
    nvmlReturn_t ret = link_of(device, link, isActive, &g, &slot);
    if (ret == NVML_SUCCESS)
        *isActive = link_active(g, slot) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return ret;
}

int nvlink_version(const struct mock_gpu *g, unsigned int *version)
{
    /* The profile names NVLink's generation (nvlink.version: 1-5); NVML answers an
     * nvmlNvlinkVersion_t (nvml.h from CUDA 12.8 names it: 1.0 = 1, 2.0 = 2, 2.2 = 3, 3.0 = 4,
     * 3.1 = 5, 4.0 = 6, 5.0 = 7), and an A100 answers 5 (open-mpi/hwloc#658). */
    static const unsigned int by_generation[] = {0, 1, 2, 5, 6, 7};
    unsigned long long v;
    if (!node_u64(g->node, NODE_NVLINK_VERSION, &v) || v == 0 || v >= sizeof by_generation / sizeof by_generation[0])
        return 0;
    *version = by_generation[v];
    return 1;
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link, unsigned int *version)
{
    const struct mock_gpu *g;
    int slot;
    nvmlReturn_t ret = link_of(device, link, version, &g, &slot);
    if (ret != NVML_SUCCESS)
        return ret;
    return nvlink_version(g, version) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkCapability(nvmlDevice_t device, unsigned int link,
                                                   nvmlNvLinkCapability_t capability, unsigned int *capResult)
{
    const struct mock_gpu *g;
    int slot;
    nvmlReturn_t ret = link_of(device, link, capResult, &g, &slot);
    if (ret != NVML_SUCCESS)
        return ret;
    switch (capability) {
    case NVML_NVLINK_CAP_P2P_SUPPORTED:
    case NVML_NVLINK_CAP_SYSMEM_ACCESS:
    case NVML_NVLINK_CAP_P2P_ATOMICS:
    case NVML_NVLINK_CAP_SYSMEM_ATOMICS:
    case NVML_NVLINK_CAP_VALID:
        *capResult = 1;
        return NVML_SUCCESS;
    case NVML_NVLINK_CAP_SLI_BRIDGE:
        *capResult = 0;
        return NVML_SUCCESS;
    default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)
{
    const struct mock_gpu *g;
    int slot;
    nvmlReturn_t ret = link_of(device, link, pci, &g, &slot);
    if (ret != NVML_SUCCESS)
        return ret;
    char bus_id[MOCK_VALUE_MAX];
    unsigned int domain, bus, dev, fn;
    link_field(g, slot, K_NVLINK_LINKS_N_REMOTE_PCI_BUS_ID, bus_id, sizeof bus_id);
    if (!api_parse_bus_id(bus_id, &domain, &bus, &dev, &fn))
        return NVML_ERROR_NOT_SUPPORTED;
    api_fill_pci(pci, domain, bus, dev, fn, 0, 0);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci)
{
    return nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, pci);
}

nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                         nvmlIntNvLinkDeviceType_t *pNvLinkDeviceType)
{
    const struct mock_gpu *g;
    int slot;
    nvmlReturn_t ret = link_of(device, link, pNvLinkDeviceType, &g, &slot);
    if (ret != NVML_SUCCESS)
        return ret;
    char type[32];
    link_field(g, slot, K_NVLINK_LINKS_N_REMOTE_DEVICE_TYPE, type, sizeof type);
    *pNvLinkDeviceType =
        strcasecmp(type, MOKKA_NVLINK_REMOTE_SWITCH) == 0   ? NVML_NVLINK_DEVICE_TYPE_SWITCH
        : strcasecmp(type, MOKKA_NVLINK_REMOTE_GPU) == 0    ? NVML_NVLINK_DEVICE_TYPE_GPU
        : strcasecmp(type, MOKKA_NVLINK_REMOTE_IBMNPU) == 0 ? NVML_NVLINK_DEVICE_TYPE_IBMNPU
                                                            : NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    return NVML_SUCCESS;
}

unsigned int nvlink_switch_links(const struct mock_gpu *g)
{
    unsigned int n = gpu_list_len(g, K_NVLINK_LINKS), count = 0;
    for (unsigned int i = 0; i < n; i++) {
        char type[32];
        link_field(g, (int)i, K_NVLINK_LINKS_N_REMOTE_DEVICE_TYPE, type, sizeof type);
        count += strcasecmp(type, MOKKA_NVLINK_REMOTE_SWITCH) == 0 && link_active(g, (int)i);
    }
    return count;
}

nvmlReturn_t mock_nvlinks_between(nvmlDevice_t a, nvmlDevice_t b, unsigned int *links)
{
    const struct mock_gpu *ga, *gb;
    nvmlReturn_t ret = mock_gpu_of(a, &ga);
    if (ret == NVML_SUCCESS)
        ret = mock_gpu_of(b, &gb);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!links)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (ga == gb) {
        *links = 0;
        return NVML_SUCCESS;
    }
    unsigned int x = nvlink_switch_links(ga), y = nvlink_switch_links(gb);
    *links = x < y ? x : y;
    return NVML_SUCCESS;
}

unsigned int nvlink_count(const struct mock_gpu *g)
{
    return gpu_list_len(g, K_NVLINK_LINKS);
}

int nvlink_state(const struct mock_gpu *g, unsigned int link, unsigned int *active)
{
    int slot = link < NVML_NVLINK_MAX_LINKS ? link_slot(g, link) : -1;
    if (slot < 0)
        return 0;
    *active = (unsigned int)link_active(g, slot);
    return 1;
}
