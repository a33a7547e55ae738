/* GPU Performance Monitoring (nvmlGpm*): what DCGM's profiling fields (DCGM_FI_PROF_*) read on
 * Hopper and later boards.
 *
 * Support: the profile's gpm.supported when it says, else a compute capability of 9 or more.
 *
 * Samples: a fixed pool of GPM_MAX_SAMPLES buffers, so a process that allocates without
 * freeing gets NVML_ERROR_MEMORY instead of growing; a handle is only ever compared with the
 * pool's slots, never dereferenced, so a freed, foreign or garbage handle is INVALID_ARGUMENT.
 * A sample records the GPU (or the GPU instance) and the second of dynamic_clock it was taken in.
 *
 * Metrics: plausible numbers that agree with the other readings, not a simulation. Over the
 * window of the two samples' seconds, (earlier, later] (the later second alone when both are
 * of the same second, or when one was allocated but never taken; at most the last
 * GPM_WINDOW_SECONDS), the moving readings of each second
 * (gpu_u64_at: the same pure function of time nvmlDeviceGetUtilizationRates and
 * nvmlDeviceGetSamples answer) are averaged: u the GPU utilization, m the memory utilization,
 * d, j, o the decoder, JPEG and OFA utilizations, all in percent. Then
 *
 *   graphics and SM activity      u           (DCGM's SM active = u / 100)
 *   SM occupancy                  u / 2
 *   integer                       u / 10
 *   FP64, FP32, FP16 (non-tensor) u / 20, u / 4, u / 10
 *   tensor: DFMA, HMMA, IMMA      u / 20, 3u / 10, u / 20; any tensor their sum, 2u / 5
 *   DRAM bandwidth                m
 *   NVDEC n, NVJPG n, NVOFA 0     d, j, o
 *   PCIe TX and RX                gpm.pcie_{tx,rx}_mib_per_sec * u / 100 (MiB/s)
 *   NVLink link n RX and TX       nvlink.bandwidth_per_link_mbps in MiB/s * u / 100 for each of
 *                                 the GPU's active links, 0 for any other; totals their sum
 *
 * so the numbers rise and fall with the utilization and stay within 0..100 percent. The CUDA
 * processes share the GPU's utilization evenly (process_util.c), so their shares add up to
 * what GPM reports, and a GPU with no process reports its profile's utilization alike. The
 * percentages are of elapsed time, so the clocks do not scale them. A MIG sample (a GPU
 * instance) reports the same percentages of its own SMs, and the PCIe and NVLink traffic
 * scaled to its share of the GPU's multiprocessors. An id that is none of nvml.h's metrics has
 * its own nvmlReturn NOT_SUPPORTED, as the real library answers per metric.
 *
 * A DCGM poll reads every metric of every GPU each second: what the layers answer for a GPU
 * (support, the rates at 100 %, its active links, the last window's readings) is kept
 * FACTS_MS and reused, so a poll costs about one nvmlDeviceGetUtilizationRates. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "mig/mig.h"

#define GPM_MAX_SAMPLES 1024u
#define GPM_WINDOW_SECONDS 60ull
#define MIB_PER_MB (1000000.0 / 1048576.0)
/* How long what the layers answered for a GPU is reused: the interval at which the overrides
 * layer rechecks its files (engine/overrides.c), so a change reaches GPM within a second, as
 * it reaches every reader. */
#define FACTS_MS 250

struct nvmlGpmSample_st {
    int live;                          /* allocated */
    int taken;                         /* a sample is recorded */
    nvmlDevice_t device;               /* the GPU */
    unsigned int gpu_instance;         /* a MIG sample's GPU instance id, else GPM_WHOLE_GPU */
    double share;                      /* of the GPU's multiprocessors */
    unsigned long long second;
};

#define GPM_WHOLE_GPU 0xFFFFFFFFu

static struct nvmlGpmSample_st pool[GPM_MAX_SAMPLES];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot a handle names, or NULL: compared with the pool's addresses, never read. */
static struct nvmlGpmSample_st *slot_of(nvmlGpmSample_t handle)
{
    uintptr_t h = (uintptr_t)handle, base = (uintptr_t)pool;
    if (h < base || h >= base + sizeof pool || (h - base) % sizeof pool[0] != 0)
        return NULL;
    struct nvmlGpmSample_st *s = &pool[(h - base) / sizeof pool[0]];
    return s->live ? s : NULL;
}

nvmlReturn_t DECLDIR nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
    if (!gpmSample)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t ret = NVML_ERROR_MEMORY;
    pthread_mutex_lock(&pool_lock);
    for (unsigned int i = 0; i < GPM_MAX_SAMPLES; i++) {
        if (!pool[i].live) {
            memset(&pool[i], 0, sizeof pool[i]);
            pool[i].live = 1;
            *gpmSample = &pool[i];
            ret = NVML_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&pool_lock);
    return ret;
}

nvmlReturn_t DECLDIR nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
    pthread_mutex_lock(&pool_lock);
    struct nvmlGpmSample_st *s = slot_of(gpmSample);
    if (s)
        s->live = 0;
    pthread_mutex_unlock(&pool_lock);
    return s ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* The averaged readings of a window, in percent. */
struct window {
    double u, m, d, j, o;
};

/* What the layers answer for one GPU that GPM reads, kept FACTS_MS: a DCGM poll reads every
 * metric of every GPU each second, and each lookup through the layers takes a lock. */
struct facts {
    const struct mock_node *node;      /* NULL: none kept */
    long long expires_ms;
    int supported;
    double pcie_tx, pcie_rx;           /* MiB/s at 100 % */
    double link_mib;                   /* one active link's MiB/s each way at 100 % */
    unsigned int active[NVML_NVLINK_MAX_LINKS], nactive;
    int windowed;                      /* `w` holds the window (first, last] */
    unsigned long long first, last;
    struct window w;
};

static struct facts kept[MOCK_MAX_GPUS];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int gpm_supported(const struct mock_gpu *g)
{
    int flag;
    if (gpu_flag(g, K_GPM_SUPPORTED, &flag))
        return flag;
    unsigned long long major;
    return gpu_u64(g, K_COMPUTE_CAPABILITY_MAJOR, &major) && major >= 9;
}

static void read_facts(const struct mock_gpu *g, struct facts *f)
{
    memset(f, 0, sizeof *f);
    f->node = g->node;
    f->supported = gpm_supported(g);
    unsigned long long v = 0;
    if (gpu_u64(g, K_GPM_PCIE_TX_MIB_PER_SEC, &v))
        f->pcie_tx = (double)v;
    v = 0;
    if (gpu_u64(g, K_GPM_PCIE_RX_MIB_PER_SEC, &v))
        f->pcie_rx = (double)v;
    v = 0;
    if (node_u64(g->node, NODE_NVLINK_BANDWIDTH_PER_LINK_MBPS, &v))
        f->link_mib = (double)v * MIB_PER_MB;
    unsigned int n = nvlink_count(g);
    for (unsigned int l = 0; l < n && l < NVML_NVLINK_MAX_LINKS; l++) {
        unsigned int active = 0;
        if (nvlink_state(g, l, &active) && active) {
            f->active[l] = 1;
            f->nactive++;
        }
    }
}

/* The GPU's facts: the kept ones while fresh, else read afresh (outside the lock) and kept. */
static void facts_of(const struct mock_gpu *g, struct facts *out)
{
    long long now = monotonic_ms();
    unsigned int at = g->phys;
    if (at >= MOCK_MAX_GPUS) {                    /* never: the node holds at most that many */
        read_facts(g, out);
        return;
    }
    pthread_mutex_lock(&kept_lock);
    int fresh = kept[at].node == g->node && now < kept[at].expires_ms;
    if (fresh)
        *out = kept[at];
    pthread_mutex_unlock(&kept_lock);
    if (fresh)
        return;
    read_facts(g, out);
    out->expires_ms = now + FACTS_MS;
    pthread_mutex_lock(&kept_lock);
    kept[at] = *out;
    pthread_mutex_unlock(&kept_lock);
}

/* Keeps the window read into *f with the facts it was read beside, while they are the kept ones. */
static void keep_window(const struct mock_gpu *g, const struct facts *f)
{
    unsigned int at = g->phys;
    if (at >= MOCK_MAX_GPUS)
        return;
    pthread_mutex_lock(&kept_lock);
    if (kept[at].node == f->node && kept[at].expires_ms == f->expires_ms) {
        kept[at].windowed = 1;
        kept[at].first = f->first;
        kept[at].last = f->last;
        kept[at].w = f->w;
    }
    pthread_mutex_unlock(&kept_lock);
}

static int supported(const struct mock_gpu *g)
{
    struct facts f;
    facts_of(g, &f);
    return f.supported;
}

nvmlReturn_t DECLDIR nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!gpmSupport)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    gpmSupport->isSupportedDevice = (unsigned int)supported(g);
    return NVML_SUCCESS;
}

/* Streaming (the driver pushing samples) is never on; turning it off is a no-op. */
nvmlReturn_t DECLDIR nvmlGpmQueryIfStreamingEnabled(nvmlDevice_t device, unsigned int *state)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!state)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!supported(g))
        return NVML_ERROR_NOT_SUPPORTED;
    *state = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t DECLDIR nvmlGpmSetStreamingEnabled(nvmlDevice_t device, unsigned int state)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (state != NVML_FEATURE_DISABLED && state != NVML_FEATURE_ENABLED)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!supported(g) || state == NVML_FEATURE_ENABLED)
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* Records a sample into the slot `handle` names. */
static nvmlReturn_t record(nvmlGpmSample_t handle, nvmlDevice_t device, const struct mock_gpu *g,
                           unsigned int gpu_instance, double share)
{
    unsigned long long now = dynamic_clock(g->node);
    pthread_mutex_lock(&pool_lock);
    struct nvmlGpmSample_st *s = slot_of(handle);
    if (s) {
        s->taken = 1;
        s->device = device;
        s->gpu_instance = gpu_instance;
        s->share = share;
        s->second = now;
    }
    pthread_mutex_unlock(&pool_lock);
    return s ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t DECLDIR nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!supported(g))
        return NVML_ERROR_NOT_SUPPORTED;
    return record(gpmSample, device, g, GPM_WHOLE_GPU, 1.0);
}

nvmlReturn_t DECLDIR nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample)
{
    const struct mock_gpu *g;
    const struct mig_table *t;
    struct mig_gpu st;
    nvmlReturn_t ret = mig_gpu_of(device, 1, &g, &t, &st);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!supported(g))
        return NVML_ERROR_NOT_SUPPORTED;
    for (unsigned int i = 0; i < st.ngi; i++) {
        if (st.gi[i].id != gpuInstanceId)
            continue;
        unsigned long long sms = 0;
        double share = 1.0;
        if (gpu_u64(g, K_CUDA_MULTIPROCESSOR_COUNT, &sms) && sms > 0 &&
            t->gi[st.gi[i].profile].multiprocessors <= sms)
            share = (double)t->gi[st.gi[i].profile].multiprocessors / (double)sms;
        return record(gpmSample, device, g, gpuInstanceId, share);
    }
    return NVML_ERROR_NOT_FOUND;
}

static double pct_at(const struct mock_gpu *g, const char *key, unsigned long long t)
{
    unsigned long long v = 0;
    gpu_u64_at(g, key, t, &v);
    return v > 100 ? 100.0 : (double)v;
}

static void average(const struct mock_gpu *g, unsigned long long first, unsigned long long last, struct window *w)
{
    if (last - first > GPM_WINDOW_SECONDS)
        first = last - GPM_WINDOW_SECONDS;
    if (first == last && first > 0)
        first--;                                    /* one sample second: that second alone */
    memset(w, 0, sizeof *w);
    double n = 0;
    for (unsigned long long t = first + 1; t <= last && t > first; t++, n++) {
        w->u += pct_at(g, K_UTILIZATION_GPU, t);
        w->m += pct_at(g, K_UTILIZATION_MEMORY, t);
        w->d += pct_at(g, K_UTILIZATION_DECODER, t);
        w->j += pct_at(g, K_UTILIZATION_JPEG, t);
        w->o += pct_at(g, K_UTILIZATION_OFA, t);
    }
    if (n > 0) {
        w->u /= n;
        w->m /= n;
        w->d /= n;
        w->j /= n;
        w->o /= n;
    }
}

/* What one call computes with. */
struct context {
    struct facts f;
    double share;
};

static double link_mib(const struct context *c)
{
    return c->f.link_mib * c->f.w.u / 100.0 * c->share;
}

/* One metric's value: 1, or 0 when `id` is none of nvml.h's. */
static int metric(struct context *c, unsigned int id, double *v)
{
    const struct window *w = &c->f.w;
    switch (id) {
    case NVML_GPM_METRIC_GRAPHICS_UTIL:
    case NVML_GPM_METRIC_SM_UTIL:
        *v = w->u;
        return 1;
    case NVML_GPM_METRIC_SM_OCCUPANCY:
        *v = w->u / 2;
        return 1;
    case NVML_GPM_METRIC_INTEGER_UTIL:
    case NVML_GPM_METRIC_FP16_UTIL:
        *v = w->u / 10;
        return 1;
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
        *v = w->u * 2 / 5;
        return 1;
    case NVML_GPM_METRIC_DFMA_TENSOR_UTIL:
    case NVML_GPM_METRIC_IMMA_TENSOR_UTIL:
    case NVML_GPM_METRIC_FP64_UTIL:
        *v = w->u / 20;
        return 1;
    case NVML_GPM_METRIC_HMMA_TENSOR_UTIL:
        *v = w->u * 3 / 10;
        return 1;
    case NVML_GPM_METRIC_FP32_UTIL:
        *v = w->u / 4;
        return 1;
    case NVML_GPM_METRIC_DRAM_BW_UTIL:
        *v = w->m;
        return 1;
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
        *v = c->f.pcie_tx * w->u / 100.0 * c->share;
        return 1;
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
        *v = c->f.pcie_rx * w->u / 100.0 * c->share;
        return 1;
    case NVML_GPM_METRIC_NVOFA_0_UTIL:
        *v = w->o;
        return 1;
    case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
    case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
        *v = link_mib(c) * c->f.nactive;
        return 1;
    default:
        break;
    }
    if (id >= NVML_GPM_METRIC_NVDEC_0_UTIL && id <= NVML_GPM_METRIC_NVDEC_7_UTIL) {
        *v = w->d;
        return 1;
    }
    if (id >= NVML_GPM_METRIC_NVJPG_0_UTIL && id <= NVML_GPM_METRIC_NVJPG_7_UTIL) {
        *v = w->j;
        return 1;
    }
    if (id >= NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC && id <= NVML_GPM_METRIC_NVLINK_L17_TX_PER_SEC) {
        unsigned int link = (id - NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC) / 2;
        *v = link < NVML_NVLINK_MAX_LINKS && c->f.active[link] ? link_mib(c) : 0.0;
        return 1;
    }
    return 0;
}

static char *unit_of(unsigned int id)
{
    static char percent[] = "%", rate[] = "MiB/sec";
    return (id >= NVML_GPM_METRIC_PCIE_TX_PER_SEC && id <= NVML_GPM_METRIC_PCIE_RX_PER_SEC) ||
                   id >= NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC
               ? rate
               : percent;
}

nvmlReturn_t DECLDIR nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet)
{
    if (!metricsGet)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlGpmSample_st a = {0}, b = {0};
    pthread_mutex_lock(&pool_lock);
    struct nvmlGpmSample_st *s1 = slot_of(metricsGet->sample1), *s2 = slot_of(metricsGet->sample2);
    if (s1 && s2) {
        a = *s1;
        b = *s2;
    }
    pthread_mutex_unlock(&pool_lock);
    /* A sample allocated but never taken holds no counts: beside a taken one it stands for
     * that one's second (nvidia-smi's dmon asks so on its first line). */
    if (s1 && s2 && a.taken != b.taken) {
        if (a.taken)
            b = a;
        else
            a = b;
    }
    /* Two taken samples of the same GPU or GPU instance. */
    if (!a.taken || !b.taken || a.device != b.device || a.gpu_instance != b.gpu_instance)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(a.device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    struct context c;
    facts_of(g, &c.f);
    unsigned long long first = a.second < b.second ? a.second : b.second;
    unsigned long long last = a.second < b.second ? b.second : a.second;
    if (!c.f.windowed || c.f.first != first || c.f.last != last) {
        average(g, first, last, &c.f.w);
        c.f.first = first;
        c.f.last = last;
        keep_window(g, &c.f);
    }
    c.share = a.second < b.second ? b.share : a.share;
    for (unsigned int i = 0; i < metricsGet->numMetrics; i++) {
        nvmlGpmMetric_t *m = &metricsGet->metrics[i];
        double v = 0;
        m->nvmlReturn = metric(&c, m->metricId, &v) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
        m->value = v;
        m->metricInfo.shortName = NULL;
        m->metricInfo.longName = NULL;
        m->metricInfo.unit = m->nvmlReturn == NVML_SUCCESS ? unit_of(m->metricId) : NULL;
    }
    return NVML_SUCCESS;
}
