/* nvmlDeviceGetProcessUtilization and nvmlDeviceGetProcessesUtilizationInfo: the GPU's live
 * CUDA processes (processes.h) and their share of its utilization. The state knows the GPU's
 * busy time, not each process's, so the processes share it evenly: each gets the GPU's SM,
 * memory, encoder, decoder, JPEG and OFA utilization divided by their number, so the shares
 * never add up past the GPU's reading. Each sample is of the current second; a caller that
 * has seen it gets NOT_FOUND, as from a driver with no newer samples. Not on a MIG-enabled
 * GPU (nvml.h). */
#define _GNU_SOURCE
#include <stdlib.h>

#include "api.h"
#include "mig/mig.h"
#include "processes.h"

#define US_PER_SECOND 1000000ull

/* The samples of one call: the processes' pids, the second's timestamp, the shares. */
struct shares {
    unsigned int *pids;
    unsigned int found;
    unsigned long long stamp;
    unsigned int sm, mem, enc, dec, jpg, ofa;
};

static void collect_pid(const struct mock_process *p, void *arg)
{
    struct shares *s = arg;
    if (s->found < MOKKA_MAX_GPU_PROCESSES)
        s->pids[s->found++] = p->pid;
}

static unsigned int share(const struct mock_gpu *g, const char *key, unsigned int n)
{
    unsigned long long v = 0;
    gpu_u64(g, key, &v);
    return (unsigned int)((v > 100 ? 100 : v) / n);
}

/* The samples newer than `last_seen`: NVML_SUCCESS with s->pids to free and s->found >= 1,
 * or the error (NOT_FOUND: none). */
static nvmlReturn_t sample(nvmlDevice_t device, unsigned long long last_seen, struct shares *s)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (mig_enabled(g))
        return NVML_ERROR_NOT_SUPPORTED;
    s->stamp = dynamic_clock(g->node) * US_PER_SECOND;
    if (last_seen >= s->stamp)
        return NVML_ERROR_NOT_FOUND;
    s->found = 0;
    if (!(s->pids = malloc(MOKKA_MAX_GPU_PROCESSES * sizeof *s->pids)))
        return NVML_ERROR_MEMORY;
    mock_processes_each(g, collect_pid, s);
    if (s->found == 0) {
        free(s->pids);
        return NVML_ERROR_NOT_FOUND;
    }
    s->sm = share(g, K_UTILIZATION_GPU, s->found);
    s->mem = share(g, K_UTILIZATION_MEMORY, s->found);
    s->enc = share(g, K_UTILIZATION_ENCODER, s->found);
    s->dec = share(g, K_UTILIZATION_DECODER, s->found);
    s->jpg = share(g, K_UTILIZATION_JPEG, s->found);
    s->ofa = share(g, K_UTILIZATION_OFA, s->found);
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                                     unsigned int *processSamplesCount,
                                                     unsigned long long lastSeenTimeStamp)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!processSamplesCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct shares s;
    if ((ret = sample(device, lastSeenTimeStamp, &s)) != NVML_SUCCESS)
        return ret;
    if (!utilization || *processSamplesCount < s.found)
        ret = NVML_ERROR_INSUFFICIENT_SIZE;
    *processSamplesCount = s.found;
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < s.found; i++) {
        utilization[i].pid = s.pids[i];
        utilization[i].timeStamp = s.stamp;
        utilization[i].smUtil = s.sm;
        utilization[i].memUtil = s.mem;
        utilization[i].encUtil = s.enc;
        utilization[i].decUtil = s.dec;
    }
    free(s.pids);
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                           nvmlProcessesUtilizationInfo_t *procesesUtilInfo)
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!procesesUtilInfo)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (procesesUtilInfo->version != nvmlProcessesUtilizationInfo_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct shares s;
    if ((ret = sample(device, procesesUtilInfo->lastSeenTimeStamp, &s)) != NVML_SUCCESS)
        return ret;
    nvmlProcessUtilizationInfo_v1_t *out = procesesUtilInfo->procUtilArray;
    if (!out || procesesUtilInfo->processSamplesCount < s.found)
        ret = NVML_ERROR_INSUFFICIENT_SIZE;
    procesesUtilInfo->processSamplesCount = s.found;
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < s.found; i++) {
        out[i].timeStamp = s.stamp;
        out[i].pid = s.pids[i];
        out[i].smUtil = s.sm;
        out[i].memUtil = s.mem;
        out[i].encUtil = s.enc;
        out[i].decUtil = s.dec;
        out[i].jpgUtil = s.jpg;
        out[i].ofaUtil = s.ofa;
    }
    free(s.pids);
    return ret;
}
