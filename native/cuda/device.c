/* Devices: count, handles, names, UUIDs, PCI addresses, memory, peers. A CUdevice
 * is its ordinal after CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES (node.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cu.h"

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = (int)cu_node()->count;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult err;
    if (!device)
        return cu_ready() == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : cu_ready();
    if (!cu_device(ordinal, &err))
        return err;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult err;
    const struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", d->name);
    return CUDA_SUCCESS;
}

/* A device is never a MIG compute instance here, so both versions give the GPU's UUID. */
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult err;
    const struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    *uuid = d->uuid;
    return CUDA_SUCCESS;
}
CU_ALIAS(cuDeviceGetUuid, cuDeviceGetUuid_v2);

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult err;
    const struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = d->total_mem;
    return CUDA_SUCCESS;
}

/* The CUDA 2.0 ABI: 32 bits, so at most 4 GiB - 1 on a bigger board. */
CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    size_t total;
    if (!bytes)
        return cuDeviceTotalMem_v2(NULL, dev);
    CUresult err = cuDeviceTotalMem_v2(&total, dev);
    if (err == CUDA_SUCCESS)
        *bytes = total > 0xffffffffu ? 0xffffffffu : (unsigned int)total;
    return err;
}

CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult err;
    const struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    *major = d->cc_major;
    *minor = d->cc_minor;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetProperties(CUdevprop *prop, CUdevice dev)
{
    CUresult err;
    const struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    const int *a = d->attrs;
    memset(prop, 0, sizeof *prop);
    prop->maxThreadsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    prop->maxThreadsDim[0] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
    prop->maxThreadsDim[1] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y];
    prop->maxThreadsDim[2] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z];
    prop->maxGridSize[0] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
    prop->maxGridSize[1] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y];
    prop->maxGridSize[2] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z];
    prop->sharedMemPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
    prop->totalConstantMemory = a[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY];
    prop->SIMDWidth = a[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
    prop->memPitch = a[CU_DEVICE_ATTRIBUTE_MAX_PITCH];
    prop->regsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
    prop->clockRate = a[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
    prop->textureAlign = a[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
    return CUDA_SUCCESS;
}

/* "0000:1B:00.0": the domain in 4 digits when it fits, upper-case hex. */
CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult err;
    const struct cu_device *d = cu_device(dev, &err);
    if (!d)
        return err;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "%04X:%02X:%02X.%X", d->pci_domain, d->pci_bus, d->pci_device,
             d->pci_function);
    return CUDA_SUCCESS;
}

/* "[domain:]bus:device[.function]" in hex, as cuDeviceGetPCIBusId and NVML print them. */
static int parse_bus_id(const char *s, unsigned int v[4])
{
    unsigned int parts[3] = {0}, n = 0, fn = 0;
    const char *p = s;
    for (;;) {
        char *end;
        unsigned long x = strtoul(p, &end, 16);
        if (end == p || x > 0xffffffffu)
            return 0;
        parts[n++] = (unsigned int)x;
        p = end;
        if (*p == ':' && n < 3) {
            p++;
            continue;
        }
        break;
    }
    if (*p == '.') {
        char *end;
        fn = (unsigned int)strtoul(p + 1, &end, 16);
        if (end == p + 1)
            return 0;
        p = end;
    }
    if (*p || n < 2)
        return 0;
    v[0] = n == 3 ? parts[0] : 0;
    v[1] = parts[n - 2];
    v[2] = parts[n - 1];
    v[3] = fn;
    return 1;
}

CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    CUresult err = cu_ready();
    if (err != CUDA_SUCCESS)
        return err;
    unsigned int want[4];
    if (!dev || !pciBusId || !parse_bus_id(pciBusId, want))
        return CUDA_ERROR_INVALID_VALUE;
    const struct cu_node *n = cu_node();
    for (unsigned int i = 0; i < n->count; i++) {
        const struct cu_device *d = &n->dev[i];
        if (d->pci_domain == want[0] && d->pci_bus == want[1] && d->pci_device == want[2] &&
            d->pci_function == want[3]) {
            *dev = (CUdevice)i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    CUresult err;
    const struct cu_device *a = cu_device(dev, &err), *b = a ? cu_device(peerDev, &err) : NULL;
    if (!b)
        return err;
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = a != b && cu_nvml_p2p(a, b);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                         CUdevice dstDevice)
{
    CUresult err;
    const struct cu_device *a = cu_device(srcDevice, &err), *b = a ? cu_device(dstDevice, &err) : NULL;
    if (!b)
        return err;
    if (!value || a == b)
        return a == b ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
    int peer = cu_nvml_p2p(a, b);
    switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
        *value = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
        *value = peer;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type, CUdevice dev)
{
    CUresult err;
    if (!cu_device(dev, &err))
        return err;
    if (!pi || (unsigned int)type >= CU_EXEC_AFFINITY_TYPE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = 0;
    return CUDA_SUCCESS;
}
