/* nvmlDeviceGetProcessUtilization: the GPU's live CUDA processes (processes.h) and their
 * share of its utilization. The state knows the GPU's busy time, not each process's, so the
 * processes share it evenly: each gets the GPU's SM, memory, encoder and decoder
 * utilization divided by their number, so the shares never add up past the GPU's reading.
 * Each sample is of the current second; a caller that has seen it gets NOT_FOUND, as from
 * a driver with no newer samples. Not on a MIG-enabled GPU (nvml.h). */
#define _GNU_SOURCE
#include <stdlib.h>

#include "api.h"
#include "mig/mig.h"
#include "processes.h"

#define US_PER_SECOND 1000000ull

struct collect {
    unsigned int *pids;
    unsigned int found;
};

static void collect_pid(const struct mock_process *p, void *arg)
{
    struct collect *c = arg;
    if (c->found < MOKKA_MAX_GPU_PROCESSES)
        c->pids[c->found++] = p->pid;
}

static unsigned int share(const struct mock_gpu *g, const char *key, unsigned int n)
{
    unsigned long long v = 0;
    gpu_u64(g, key, &v);
    return (unsigned int)((v > 100 ? 100 : v) / n);
}

nvmlReturn_t DECLDIR nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                                     unsigned int *processSamplesCount,
                                                     unsigned long long lastSeenTimeStamp)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!processSamplesCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long stamp = dynamic_clock(g->node) * US_PER_SECOND;
    if (lastSeenTimeStamp >= stamp)
        return NVML_ERROR_NOT_FOUND;
    struct collect c = {malloc(MOKKA_MAX_GPU_PROCESSES * sizeof *c.pids), 0};
    if (!c.pids)
        return NVML_ERROR_MEMORY;
    mock_processes_each(g, collect_pid, &c);
    unsigned int n = c.found;
    if (n == 0)
        ret = NVML_ERROR_NOT_FOUND;
    else if (!utilization || *processSamplesCount < n)
        ret = NVML_ERROR_INSUFFICIENT_SIZE;
    if (ret != NVML_ERROR_NOT_FOUND)
        *processSamplesCount = n;
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < n; i++) {
        utilization[i].pid = c.pids[i];
        utilization[i].timeStamp = stamp;
        utilization[i].smUtil = share(g, K_UTILIZATION_GPU, n);
        utilization[i].memUtil = share(g, K_UTILIZATION_MEMORY, n);
        utilization[i].encUtil = share(g, K_UTILIZATION_ENCODER, n);
        utilization[i].decUtil = share(g, K_UTILIZATION_DECODER, n);
    }
    free(c.pids);
    return ret;
}
