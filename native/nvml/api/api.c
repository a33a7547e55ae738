/* The shapes most device queries share: check init and handle, check the
 * output pointer, look the value up, or NOT_SUPPORTED when the state has none. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"

nvmlReturn_t api_copy_string(const char *value, char *buf, unsigned int length)
{
    size_t len = strlen(value);
    if (len + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, value, len + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t api_u64(nvmlDevice_t device, const char *key, unsigned long long *out)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    return gpu_u64(g, key, out) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t api_u32(nvmlDevice_t device, const char *key, unsigned int *out)
{
    unsigned long long v = 0;
    nvmlReturn_t ret = api_u64(device, key, out ? &v : NULL);
    if (ret == NVML_SUCCESS && v > 0xffffffffull)
        return NVML_ERROR_NOT_SUPPORTED;
    if (ret == NVML_SUCCESS)
        *out = (unsigned int)v;
    return ret;
}

nvmlReturn_t api_string(nvmlDevice_t device, const char *key, char *buf, unsigned int length)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    char v[MOCK_VALUE_MAX];
    if (gpu_str(g, key, v, sizeof v) != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    return api_copy_string(v, buf, length);
}

nvmlReturn_t api_enabled(nvmlDevice_t device, const char *key, nvmlEnableState_t *out)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    int on;
    if (!gpu_flag(g, key, &on))
        return NVML_ERROR_NOT_SUPPORTED;
    *out = on ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

static int hex_field(const char *s, size_t len, unsigned long max, unsigned int *out)
{
    if (len == 0 || len > 8)
        return 0;
    unsigned long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return 0;
        v = v * 16 + (unsigned long)(isdigit((unsigned char)s[i]) ? s[i] - '0'
                                                                  : tolower((unsigned char)s[i]) - 'a' + 10);
    }
    if (v > max)
        return 0;
    *out = (unsigned int)v;
    return 1;
}

int api_parse_bus_id(const char *text, unsigned int *domain, unsigned int *bus,
                     unsigned int *device, unsigned int *function)
{
    const char *c1 = strchr(text, ':');
    if (!c1)
        return 0;
    const char *c2 = strchr(c1 + 1, ':');
    const char *bus_at = text;
    *domain = 0;
    if (c2) {                                     /* domain:bus:device[.function] */
        if (!hex_field(text, (size_t)(c1 - text), 0xffffffffUL, domain))
            return 0;
        bus_at = c1 + 1;
        c1 = c2;
    }
    if (!hex_field(bus_at, (size_t)(c1 - bus_at), 0xff, bus))
        return 0;
    const char *dev_at = c1 + 1;
    const char *dot = strchr(dev_at, '.');
    size_t dev_len = dot ? (size_t)(dot - dev_at) : strlen(dev_at);
    if (!hex_field(dev_at, dev_len, 0x1f, device))
        return 0;
    *function = 0;
    return !dot || hex_field(dot + 1, strlen(dot + 1), 7, function);
}

void api_fill_pci(nvmlPciInfo_t *pci, unsigned int domain, unsigned int bus, unsigned int device,
                  unsigned int function, unsigned int device_id, unsigned int subsystem_id)
{
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X",
             domain & 0xffff, bus, device, function);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", domain, bus, device, function);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = device;
    pci->pciDeviceId = device_id;
    pci->pciSubSystemId = subsystem_id;
}

int api_arch_before(const struct mock_gpu *g, const char *generation)
{
    static const char *const order[] = {"kepler", "maxwell", "pascal", "volta", "turing",
                                        "ampere", "ada", "hopper", "blackwell"};
    char arch[64];
    if (gpu_raw(g, K_ARCHITECTURE, arch, sizeof arch) != 1)
        return -1;
    for (size_t i = 0; i < sizeof order / sizeof order[0] && strcasecmp(order[i], generation) != 0; i++)
        if (strcasecmp(arch, order[i]) == 0)
            return 1;
    return 0;
}

int api_pre_ada(const struct mock_gpu *g)
{
    return api_arch_before(g, "ada") == 1;
}

/* What the GPU's `refused` block makes a reading answer: NVML_SUCCESS when it is
 * not refused (the caller answers it), else the NVML error the real board gave. */
nvmlReturn_t api_refusal(const struct mock_gpu *g, const char *key)
{
    static const struct { const char *word; nvmlReturn_t code; } refusals[] = {
        {MOKKA_REFUSAL_DEPRECATED, NVML_ERROR_DEPRECATED},
        {MOKKA_REFUSAL_NO_PERMISSION, NVML_ERROR_NO_PERMISSION},
        {MOKKA_REFUSAL_NOT_SUPPORTED, NVML_ERROR_NOT_SUPPORTED}};
    char v[64];
    if (gpu_raw(g, key, v, sizeof v) != 1)
        return NVML_SUCCESS;
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (strcasecmp(v, refusals[i].word) == 0)
            return refusals[i].code;
    return NVML_SUCCESS;
}
