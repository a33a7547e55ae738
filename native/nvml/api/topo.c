/* Placement: NUMA node, CPU and memory affinity, the PCIe common ancestor of
 * two GPUs and the GPUs near one (from root_complex / numa_node, as
 * mokka/smi/topo.py decides PHB / NODE / SYS). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define BITS_PER_LONG (8 * sizeof(unsigned long))

/* A CPU number at *p below MOKKA_MAX_CPUS into *cpu, *p moved past it: 1; else 0. */
static int cpu_number(const char **p, unsigned long *cpu)
{
    if (!isdigit((unsigned char)**p))
        return 0;
    unsigned long v = 0;
    for (; isdigit((unsigned char)**p); (*p)++) {
        v = v * 10 + (unsigned long)(**p - '0');
        if (v >= MOKKA_MAX_CPUS)
            return 0;                             /* no larger machine exists: not a CPU list */
    }
    *cpu = v;
    return 1;
}

/* Calls `each(cpu, arg)` for every CPU of a list like "0-3,8,10-11"; 0 if malformed. */
static int cpu_list(const char *text, void (*each)(unsigned long cpu, void *arg), void *arg)
{
    const char *p = text;
    int any = 0;
    while (*p) {
        unsigned long lo, hi;
        if (!cpu_number(&p, &lo))
            return 0;
        hi = lo;
        if (*p == '-') {
            p++;
            if (!cpu_number(&p, &hi))
                return 0;
        }
        if (hi < lo)
            return 0;
        for (unsigned long c = lo; c <= hi; c++)
            each(c, arg);
        any = 1;
        if (*p == ',')
            p++;
        else if (*p)
            return 0;
    }
    return any;
}

struct mask { unsigned long *set; unsigned int words; };

static void set_bit(unsigned long cpu, void *arg)
{
    struct mask *m = arg;
    if (cpu / BITS_PER_LONG < m->words)
        m->set[cpu / BITS_PER_LONG] |= 1ul << (cpu % BITS_PER_LONG);
}

static nvmlReturn_t cpu_affinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (cpuSetSize == 0 || !cpuSet)
        return NVML_ERROR_INVALID_ARGUMENT;
    char text[MOCK_VALUE_MAX];
    struct mask m = {cpuSet, cpuSetSize};
    if (gpu_str(g, K_CPU_AFFINITY, text, sizeof text) != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    memset(cpuSet, 0, cpuSetSize * sizeof *cpuSet);
    if (!cpu_list(text, set_bit, &m)) {
        memset(cpuSet, 0, cpuSetSize * sizeof *cpuSet);
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)
{
    return cpu_affinity(device, cpuSetSize, cpuSet);
}

/* Binding the calling thread: to the GPU's CPUs (Set), or to every CPU (Clear). The kernel
 * keeps of a mask the CPUs this machine has and lets the thread use; a node whose profile
 * names CPUs the machine under it lacks (a 2-CPU runner under an 8-GPU profile) has the
 * thread keep its CPUs when none of the GPU's is here, as no call can give it more. */
static nvmlReturn_t bind_thread(nvmlDevice_t device, int to_gpu)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    char text[MOCK_VALUE_MAX];
    if (gpu_str(g, K_CPU_AFFINITY, text, sizeof text) != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    enum { WORDS = MOKKA_MAX_CPUS / BITS_PER_LONG };
    unsigned long *set = calloc(WORDS, sizeof *set);
    if (!set)
        return NVML_ERROR_MEMORY;
    struct mask m = {set, WORDS};
    if (!to_gpu)
        memset(set, 0xff, WORDS * sizeof *set);
    else if (!cpu_list(text, set_bit, &m)) {
        free(set);
        return NVML_ERROR_NOT_SUPPORTED;
    }
    int rc = sched_setaffinity(0, WORDS * sizeof *set, (cpu_set_t *)set);
    int err = errno;
    free(set);
    return rc == 0 || err == EINVAL ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t DECLDIR nvmlDeviceSetCpuAffinity(nvmlDevice_t device)
{
    return bind_thread(device, 1);
}

nvmlReturn_t DECLDIR nvmlDeviceClearCpuAffinity(nvmlDevice_t device)
{
    return bind_thread(device, 0);
}

nvmlReturn_t DECLDIR nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize,
                                                         unsigned long *cpuSet, nvmlAffinityScope_t scope)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET)
        return NVML_ERROR_INVALID_ARGUMENT;
    return cpu_affinity(device, cpuSetSize, cpuSet);  /* one socket per NUMA node */
}

nvmlReturn_t DECLDIR nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize,
                                                 unsigned long *nodeSet, nvmlAffinityScope_t scope)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (nodeSetSize == 0 || !nodeSet ||
        (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET))
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long numa;
    if (!gpu_u64(g, K_NUMA_NODE, &numa))
        return NVML_ERROR_NOT_SUPPORTED;
    memset(nodeSet, 0, nodeSetSize * sizeof *nodeSet);
    struct mask m = {nodeSet, nodeSetSize};
    set_bit((unsigned long)numa, &m);
    return NVML_SUCCESS;
}

/* topo.link without NVLink: PHB, NODE or SYS. */
static nvmlGpuTopologyLevel_t level_between(const struct mock_gpu *a, const struct mock_gpu *b)
{
    if (a == b)
        return NVML_TOPOLOGY_INTERNAL;
    char ra[MOCK_VALUE_MAX] = "", rb[MOCK_VALUE_MAX] = "";
    int has_a = gpu_raw(a, K_ROOT_COMPLEX, ra, sizeof ra) == 1, has_b = gpu_raw(b, K_ROOT_COMPLEX, rb, sizeof rb) == 1;
    if (has_a == has_b && strcmp(ra, rb) == 0)
        return NVML_TOPOLOGY_HOSTBRIDGE;
    unsigned long long na, nb;
    int numa_a = gpu_u64(a, K_NUMA_NODE, &na), numa_b = gpu_u64(b, K_NUMA_NODE, &nb);
    if (numa_a == numa_b && (!numa_a || na == nb))
        return NVML_TOPOLOGY_NODE;
    return NVML_TOPOLOGY_SYSTEM;
}

nvmlReturn_t DECLDIR nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                         nvmlGpuTopologyLevel_t *pathInfo)
{
    const struct mock_gpu *a, *b;
    nvmlReturn_t ret = mock_gpu_of(device1, &a);
    if (ret == NVML_SUCCESS)
        ret = mock_gpu_of(device2, &b);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!pathInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    *pathInfo = level_between(a, b);
    return NVML_SUCCESS;
}

/* NVML's contract for handle arrays: *count 0 asks how many; else fill up to *count. */
static nvmlReturn_t handles(const struct mock_gpu *const *found, unsigned int n, unsigned int *count,
                            nvmlDevice_t *deviceArray)
{
    if (*count == 0) {
        *count = n;
        return NVML_SUCCESS;
    }
    if (!deviceArray)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int k = n < *count ? n : *count;
    for (unsigned int i = 0; i < k; i++)
        deviceArray[i] = mock_handle_of(found[i]);
    *count = k;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t device, nvmlGpuTopologyLevel_t level,
                                                      unsigned int *count, nvmlDevice_t *deviceArray)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_node *n = mock_node();
    const struct mock_gpu *found[MOCK_MAX_GPUS];
    unsigned int k = 0;
    for (unsigned int i = 0; i < n->nvisible; i++) {
        const struct mock_gpu *other = &n->gpus[n->visible[i]];
        if (other != g && level_between(g, other) <= level)
            found[k++] = other;
    }
    return handles(found, k, count, deviceArray);
}

struct has_cpu { unsigned long cpu; int hit; };

static void check_cpu(unsigned long cpu, void *arg)
{
    struct has_cpu *h = arg;
    h->hit |= cpu == h->cpu;
}

nvmlReturn_t DECLDIR nvmlSystemGetTopologyGpuSet(unsigned int cpuNumber, unsigned int *count,
                                                 nvmlDevice_t *deviceArray)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_node *n = mock_node();
    const struct mock_gpu *found[MOCK_MAX_GPUS];
    unsigned int k = 0;
    for (unsigned int i = 0; i < n->nvisible; i++) {
        const struct mock_gpu *g = &n->gpus[n->visible[i]];
        char text[MOCK_VALUE_MAX];
        struct has_cpu h = {cpuNumber, 0};
        if (gpu_str(g, K_CPU_AFFINITY, text, sizeof text) == 1 && cpu_list(text, check_cpu, &h) && h.hit)
            found[k++] = g;
    }
    return handles(found, k, count, deviceArray);
}

nvmlReturn_t DECLDIR nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                            nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t *p2pStatus)
{
    unsigned int links = 0;
    nvmlReturn_t ret = mock_nvlinks_between(device1, device2, &links);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!p2pStatus || (unsigned int)p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK)
        *p2pStatus = links > 0 ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
    else
        *p2pStatus = NVML_P2P_STATUS_OK;
    return NVML_SUCCESS;
}
