/* System-wide queries and the processes the state lists. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "mig/mig.h"
#include "printable.h"
#include "processes.h"

static nvmlReturn_t system_string(const char *key, char *buf, unsigned int length)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    const char *v = node_get(mock_node(), key);
    if (!v || mock_is_na(v))
        return NVML_ERROR_NOT_SUPPORTED;
    return api_copy_string(v, buf, length);
}

nvmlReturn_t DECLDIR nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    return system_string(NODE_SYSTEM_DRIVER_VERSION, version, length);
}

nvmlReturn_t DECLDIR nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    return system_string(NODE_SYSTEM_NVML_VERSION, version, length);
}

static nvmlReturn_t cuda_version(int *out)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_node *n = mock_node();
    unsigned long long major, minor = 0;
    if (!node_u64(n, NODE_SYSTEM_CUDA_VERSION_MAJOR, &major)) {
        const char *text = node_get(n, NODE_SYSTEM_CUDA_VERSION);
        unsigned int a, b = 0;
        if (!text || sscanf(text, "%u.%u", &a, &b) < 1)
            return NVML_ERROR_NOT_SUPPORTED;
        major = a;
        minor = b;
    } else {
        node_u64(n, NODE_SYSTEM_CUDA_VERSION_MINOR, &minor);
    }
    *out = (int)(major * 1000 + minor * 10);      /* 12.4 -> 12040 */
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    return cuda_version(cudaDriverVersion);
}

nvmlReturn_t DECLDIR nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    return cuda_version(cudaDriverVersion);
}

nvmlReturn_t DECLDIR nvmlUnitGetCount(unsigned int *unitCount)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!unitCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *unitCount = 0;                               /* no S-class units */
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGetExcludedDeviceCount(unsigned int *deviceCount)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = 0;
    return NVML_SUCCESS;
}

/* --- processes (values.processes: never a row without a pid) ---------------------------- */

struct proc {
    unsigned int pid;
    unsigned long long used_bytes;
};

struct append { struct proc *out; unsigned int cap, found; };

static void append_live(const struct mock_process *p, void *arg)
{
    struct append *a = arg;
    if (a->found < a->cap) {
        a->out[a->found].pid = p->pid;
        a->out[a->found].used_bytes = p->used_bytes;
    }
    a->found++;
}

/* The GPU's processes of `kind` ('C' compute, 'G' graphics): the state's, then for
 * compute the CUDA processes of the node (processes.c); returns how many. */
static unsigned int processes(const struct mock_gpu *g, char kind, struct proc *out, unsigned int cap)
{
    unsigned int n = gpu_list_len(g, K_PROCESSES), found = 0;
    for (unsigned int i = 0; i < n; i++) {
        char key[96], type[16] = "C";
        unsigned long long pid = 0, mib = 0;
        snprintf(key, sizeof key, K_PROCESSES_N_PID, i);
        if (!gpu_u64(g, key, &pid) || pid == 0 || pid > 0xffffffffull)
            continue;
        snprintf(key, sizeof key, K_PROCESSES_N_TYPE, i);
        if (gpu_str(g, key, type, sizeof type) != 1)
            snprintf(type, sizeof type, "C");
        if (!strchr(type, kind))
            continue;
        snprintf(key, sizeof key, K_PROCESSES_N_USED_MEMORY_MIB, i);
        gpu_u64(g, key, &mib);
        if (found < cap) {
            out[found].pid = (unsigned int)pid;
            out[found].used_bytes = mib * 1024 * 1024;
        }
        found++;
    }
    if (kind == 'C') {
        struct append live = {out, cap, found};
        mock_processes_each(g, append_live, &live);
        found = live.found;
    }
    return found;
}

/* NVML's contract: too small an array -> INSUFFICIENT_SIZE and the count needed. On
 * NVML_SUCCESS *procs holds *n processes (at most MOKKA_MAX_GPU_PROCESSES: kinds.c
 * refuses a longer list) for the caller to free. */
static nvmlReturn_t list(nvmlDevice_t device, char kind, unsigned int *count, struct proc **procs,
                         unsigned int *n)
{
    const struct mock_gpu *g;
    unsigned int phys, gi, ci;
    int mig = mig_handle_ids(device, &phys, &gi, &ci);
    nvmlReturn_t ret = mig ? mig_check_any(device) : mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *procs = malloc(MOKKA_MAX_GPU_PROCESSES * sizeof **procs);
    if (!*procs)
        return NVML_ERROR_MEMORY;
    *n = kind && !mig ? processes(g, kind, *procs, MOKKA_MAX_GPU_PROCESSES) : 0;   /* none runs in a MIG device */
    if (*n > MOKKA_MAX_GPU_PROCESSES)
        *n = MOKKA_MAX_GPU_PROCESSES;
    ret = *count < *n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = *n;
    if (ret != NVML_SUCCESS) {
        free(*procs);
        *procs = NULL;
    }
    return ret;
}

static nvmlReturn_t list_v2(nvmlDevice_t device, char kind, unsigned int *count, nvmlProcessInfo_t *infos)
{
    struct proc *procs;
    unsigned int n;
    nvmlReturn_t ret = list(device, kind, count, &procs, &n);
    if (ret != NVML_SUCCESS)
        return ret;
    if (n > 0 && !infos)
        ret = NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < n; i++) {
        infos[i].pid = procs[i].pid;
        infos[i].usedGpuMemory = procs[i].used_bytes;
        infos[i].gpuInstanceId = 0xFFFFFFFFu;     /* no MIG */
        infos[i].computeInstanceId = 0xFFFFFFFFu;
    }
    free(procs);
    return ret;
}

static nvmlReturn_t list_v1(nvmlDevice_t device, char kind, unsigned int *count, nvmlProcessInfo_v1_t *infos)
{
    struct proc *procs;
    unsigned int n;
    nvmlReturn_t ret = list(device, kind, count, &procs, &n);
    if (ret != NVML_SUCCESS)
        return ret;
    if (n > 0 && !infos)
        ret = NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < n; i++) {
        infos[i].pid = procs[i].pid;
        infos[i].usedGpuMemory = procs[i].used_bytes;
    }
    free(procs);
    return ret;
}

/* The entries of NVIDIA's nvidia-smi 550 process slots (measured: its Processes box shows
 * pid, memory and name from these, "N/A" for the instance ids 0xFFFFFFFF). */
struct smi_process {
    nvmlProcessDetail_v1_t detail;
    char name[4096];
};
_Static_assert(sizeof(struct smi_process) == 4128, "nvidia-smi 550 strides its buffer by 4128 bytes");

/* Through NVML's own list (the count first, then the entries), so the slots follow it
 * in every bound and error it has. */
nvmlReturn_t mock_smi_processes(nvmlDevice_t device, char kind, unsigned int *count, void *entries)
{
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = 0;
    nvmlReturn_t ret = list_v2(device, kind, &n, NULL);
    if (ret != NVML_SUCCESS && ret != NVML_ERROR_INSUFFICIENT_SIZE)
        return ret;
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && !entries)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlProcessInfo_t *infos = calloc(n ? n : 1, sizeof *infos);
    if (!infos)
        return NVML_ERROR_MEMORY;
    ret = list_v2(device, kind, &n, infos);      /* n may have grown since: INSUFFICIENT_SIZE */
    *count = n;
    struct smi_process *out = entries;
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].detail.pid = infos[i].pid;
        out[i].detail.usedGpuMemory = infos[i].usedGpuMemory;
        out[i].detail.gpuInstanceId = infos[i].gpuInstanceId;
        out[i].detail.computeInstanceId = infos[i].computeInstanceId;
        if (nvmlSystemGetProcessName(infos[i].pid, out[i].name, sizeof out[i].name) != NVML_SUCCESS)
            out[i].name[0] = '\0';
    }
    free(infos);
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                             nvmlProcessInfo_t *infos)
{
    return list_v2(device, 'C', infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                             nvmlProcessInfo_v2_t *infos)
{
    return list_v2(device, 'C', infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                          nvmlProcessInfo_v1_t *infos)
{
    return list_v1(device, 'C', infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_t *infos)
{
    return list_v2(device, 'G', infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_v2_t *infos)
{
    return list_v2(device, 'G', infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                           nvmlProcessInfo_v1_t *infos)
{
    return list_v1(device, 'G', infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                nvmlProcessInfo_t *infos)
{
    return list_v2(device, 0, infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                nvmlProcessInfo_v2_t *infos)
{
    return list_v2(device, 0, infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                             nvmlProcessInfo_v1_t *infos)
{
    return list_v1(device, 0, infoCount, infos);
}

nvmlReturn_t DECLDIR nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    nvmlReturn_t ret = mock_require_init();
    if (ret != NVML_SUCCESS)
        return ret;
    if (!name || length == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_node *n = mock_node();
    if (mock_processes_name(n, pid, name, length))   /* one scan of the records, not one per GPU */
        return NVML_SUCCESS;
    for (unsigned int v = 0; v < n->nvisible; v++) {
        const struct mock_gpu *g = &n->gpus[n->visible[v]];
        unsigned int count = gpu_list_len(g, K_PROCESSES);
        for (unsigned int i = 0; i < count; i++) {
            char key[96], text[MOCK_VALUE_MAX];
            unsigned long long p;
            snprintf(key, sizeof key, K_PROCESSES_N_PID, i);
            if (!gpu_u64(g, key, &p) || p != pid)
                continue;
            snprintf(key, sizeof key, K_PROCESSES_N_NAME, i);
            if (gpu_raw(g, key, text, sizeof text) != 1)
                text[0] = '\0';
            printable_copy(name, length, text);   /* NVML truncates the name */
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}
