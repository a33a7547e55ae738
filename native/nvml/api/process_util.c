/* nvmlDeviceGetProcessUtilization and nvmlDeviceGetProcessesUtilizationInfo: the GPU's live
 * CUDA processes (processes.h) and their share of its utilization. The state knows the GPU's
 * busy time, not each process's, so the processes share it evenly: each gets the GPU's SM,
 * memory, encoder, decoder, JPEG and OFA utilization divided by their number, so the shares
 * never add up past the GPU's reading. Each sample is of the current second; a caller that
 * has seen it gets NOT_FOUND, as from a driver with no newer samples. Not on a MIG-enabled
 * GPU (nvml.h). nvidia-smi 550's pmon reads the same shares through its private table, one
 * process per engine (mock_smi_engine_records).
 *
 * A monitor polls these for every GPU several times a second: what the layers answer for a
 * GPU (its MIG mode and six utilizations of the second) is kept READINGS_MS for that second
 * and reused, as GPM keeps its facts (gpm.c), so a change reaches these readers when it
 * reaches every other. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "engine/file_id.h"
#include "mig/mig.h"
#include "processes.h"

#define US_PER_SECOND 1000000ull
/* The overrides layer's recheck interval (engine/overrides.c). */
#define READINGS_MS 250

enum { SM, MEM, ENC, DEC, JPG, OFA, READINGS };

/* What the layers answered for one GPU in one second. */
struct readings {
    const struct mock_node *node;      /* NULL: none kept */
    long long expires_ms;
    unsigned long long stamp;
    int mig;
    unsigned int util[READINGS];       /* percent, at most 100 */
};

static struct readings kept[MOCK_MAX_GPUS];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

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

static unsigned int percent(const struct mock_gpu *g, const char *key)
{
    unsigned long long v = 0;
    gpu_u64(g, key, &v);
    return (unsigned int)(v > 100 ? 100 : v);
}

/* The GPU's readings of the second `stamp`: kept ones while they last, else the layers'. */
static void readings_of(const struct mock_gpu *g, unsigned long long stamp, struct readings *out)
{
    static const char *const keys[READINGS] = {
        [SM] = K_UTILIZATION_GPU, [MEM] = K_UTILIZATION_MEMORY, [ENC] = K_UTILIZATION_ENCODER,
        [DEC] = K_UTILIZATION_DECODER, [JPG] = K_UTILIZATION_JPEG, [OFA] = K_UTILIZATION_OFA};
    long long now = monotonic_ms();
    struct readings *k = g->phys < MOCK_MAX_GPUS ? &kept[g->phys] : NULL;
    pthread_mutex_lock(&kept_lock);
    int fresh = k && k->node == g->node && k->stamp == stamp && now < k->expires_ms;
    if (fresh)
        *out = *k;
    pthread_mutex_unlock(&kept_lock);
    if (fresh)
        return;
    out->node = g->node;
    out->stamp = stamp;
    out->expires_ms = now + READINGS_MS;
    out->mig = mig_enabled(g);
    for (unsigned int i = 0; i < READINGS; i++)
        out->util[i] = out->mig ? 0 : percent(g, keys[i]);
    if (!k)
        return;
    pthread_mutex_lock(&kept_lock);
    *k = *out;
    pthread_mutex_unlock(&kept_lock);
}

/* The samples newer than `last_seen`: NVML_SUCCESS with s->pids to free and s->found >= 1,
 * or the error (NOT_FOUND: none). */
static nvmlReturn_t sample(nvmlDevice_t device, unsigned long long last_seen, struct shares *s)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    s->stamp = dynamic_clock(g->node) * US_PER_SECOND;
    struct readings r;
    readings_of(g, s->stamp, &r);
    if (r.mig)
        return NVML_ERROR_NOT_SUPPORTED;
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
    s->sm = r.util[SM] / s->found;
    s->mem = r.util[MEM] / s->found;
    s->enc = r.util[ENC] / s->found;
    s->dec = r.util[DEC] / s->found;
    s->jpg = r.util[JPG] / s->found;
    s->ofa = r.util[OFA] / s->found;
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

/* pmon passes a wall-clock "last seen" while a pinned clock may stand still: the shares of
 * the current second are given whatever it says. */
nvmlReturn_t mock_smi_engine_records(nvmlDevice_t device, unsigned int *samples,
                                     struct mock_smi_engine_record records[MOCK_SMI_ENGINES])
{
    nvmlReturn_t ret = mock_check_device(device);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!samples || !records)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (*samples < MOCK_SMI_ENGINES)                /* in: the room nvidia-smi gives, 100 */
        return NVML_ERROR_INSUFFICIENT_SIZE;
    struct shares s;
    if ((ret = sample(device, 0, &s)) != NVML_SUCCESS)
        return ret;
    const unsigned int share[MOCK_SMI_ENGINES] = {s.sm, s.mem, s.enc, s.dec, s.jpg, s.ofa};
    /* A record names one process: the shares are even, so the first listed stands for all.
     * An encoder, decoder, JPEG or OFA share of 0 names none, so pmon prints "-" for an
     * engine the process does not use, as on a board. */
    for (unsigned int i = 0; i < MOCK_SMI_ENGINES; i++) {
        memset(&records[i], 0, sizeof records[i]);
        records[i].timestamp = s.stamp;
        records[i].share = share[i];
        records[i].pid = i < 2 || share[i] > 0 ? s.pids[0] : 0;
    }
    *samples = 1;
    free(s.pids);
    return NVML_SUCCESS;
}

_Static_assert(sizeof(struct mock_smi_engine_record) == 80, "pmon reads its records 80 bytes apart");
