/* Accounting: nvmlDeviceGetAccountingPids, GetAccountingStats, ClearAccountingPids.
 *
 * While a GPU's accounting mode is on (nvmlDeviceSetAccountingMode, settings.nvml), its
 * accounted processes are its live CUDA processes (processes.h: the records the mock
 * CUDA driver keeps), each with what nvml.h's nvmlAccountingStats_t says of a running
 * one: its share of the GPU's utilization (process_util.c's even share), the memory it
 * holds, its start (the kernel's, /proc/<pid>/stat), time 0 while it runs, isRunning 1.
 * A process that ended leaves no record behind, so no terminated process is listed, and
 * ClearAccountingPids, which clears the terminated ones (root only), has none to clear.
 * With accounting off the list is empty, as a real board's (a captured one answers
 * SUCCESS and no pids), and no pid has stats (NOT_FOUND); a board that reports no
 * accounting mode has none of these calls (NOT_SUPPORTED).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "processes.h"

#define US_PER_SECOND 1000000ull
#define STAT_MAX 4096                             /* /proc/<pid>/stat, read bounded */

/* The handle and its accounting mode: NVML_SUCCESS with *on, or the error. */
static nvmlReturn_t accounting(nvmlDevice_t device, const struct mock_gpu **g, int *on)
{
    nvmlReturn_t ret = mock_gpu_of(device, g);
    if (ret != NVML_SUCCESS)
        return ret;
    return gpu_flag(*g, K_ACCOUNTING_MODE, on) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

struct listed {
    unsigned int *pids;
    unsigned long long *used;
    unsigned int found;
};

static void collect(const struct mock_process *p, void *arg)
{
    struct listed *l = arg;
    if (l->found >= MOKKA_MAX_GPU_PROCESSES)
        return;
    l->pids[l->found] = p->pid;
    l->used[l->found++] = p->used_bytes;
}

/* The GPU's live CUDA processes: 1 with l's arrays to free, 0 without memory. */
static int list(const struct mock_gpu *g, struct listed *l)
{
    l->found = 0;
    l->pids = malloc(MOKKA_MAX_GPU_PROCESSES * sizeof *l->pids);
    l->used = malloc(MOKKA_MAX_GPU_PROCESSES * sizeof *l->used);
    if (!l->pids || !l->used) {
        free(l->pids);
        free(l->used);
        return 0;
    }
    mock_processes_each(g, collect, l);
    return 1;
}

nvmlReturn_t DECLDIR nvmlDeviceGetAccountingPids(nvmlDevice_t device, unsigned int *count, unsigned int *pids)
{
    const struct mock_gpu *g;
    int on;
    nvmlReturn_t ret = accounting(device, &g, &on);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct listed l = {NULL, NULL, 0};
    if (on && !list(g, &l))
        return NVML_ERROR_MEMORY;
    if (l.found > 0 && (!pids || *count < l.found))
        ret = NVML_ERROR_INSUFFICIENT_SIZE;
    for (unsigned int i = 0; ret == NVML_SUCCESS && i < l.found; i++)
        pids[i] = l.pids[i];
    *count = l.found;
    free(l.pids);
    free(l.used);
    return ret;
}

/* When process `pid` started, in µs since the epoch: the boot time (/proc/stat's btime)
 * and its start in clock ticks after it (field 22 of /proc/<pid>/stat); 0 when unknown. */
static unsigned long long started_us(unsigned int pid)
{
    char path[64], text[STAT_MAX];
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    const char *p = strrchr(text, ')');           /* after the command, which may hold anything */
    unsigned long long ticks = 0;
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
        return 0;
    FILE *f = fopen("/proc/stat", "re");
    unsigned long long boot = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "btime %llu", &boot) == 1)
            break;
    if (f)
        fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (boot == 0 || hz <= 0)
        return 0;
    return boot * US_PER_SECOND + ticks * US_PER_SECOND / (unsigned long long)hz;
}

static unsigned int share(const struct mock_gpu *g, const char *key, unsigned int n)
{
    unsigned long long v = 0;
    gpu_u64(g, key, &v);
    return (unsigned int)((v > 100 ? 100 : v) / n);
}

nvmlReturn_t DECLDIR nvmlDeviceGetAccountingStats(nvmlDevice_t device, unsigned int pid, nvmlAccountingStats_t *stats)
{
    const struct mock_gpu *g;
    int on;
    nvmlReturn_t ret = accounting(device, &g, &on);
    if (ret != NVML_SUCCESS)
        return ret;
    if (!stats)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct listed l = {NULL, NULL, 0};
    if (!on)
        return NVML_ERROR_NOT_FOUND;
    if (!list(g, &l))
        return NVML_ERROR_MEMORY;
    ret = NVML_ERROR_NOT_FOUND;
    for (unsigned int i = 0; i < l.found; i++) {
        if (l.pids[i] != pid)
            continue;
        memset(stats, 0, sizeof *stats);
        stats->gpuUtilization = share(g, K_UTILIZATION_GPU, l.found);
        stats->memoryUtilization = share(g, K_UTILIZATION_MEMORY, l.found);
        stats->maxMemoryUsage = l.used[i];
        stats->time = 0;                          /* nvml.h: 0 while the process runs */
        stats->startTime = started_us(pid);
        stats->isRunning = 1;
        ret = NVML_SUCCESS;
        break;
    }
    free(l.pids);
    free(l.used);
    return ret;
}

nvmlReturn_t DECLDIR nvmlDeviceClearAccountingPids(nvmlDevice_t device)
{
    const struct mock_gpu *g;
    int on;
    nvmlReturn_t ret = accounting(device, &g, &on);
    if (ret != NVML_SUCCESS)
        return ret;
    return geteuid() == 0 ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
}
