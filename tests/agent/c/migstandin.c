/* A stand-in libnvidia-ml.so.1 for the agent's MIG rendering tests: it answers the NVML
 * calls of the agent's MIG device walk (mokka/agent/migdevices.py) from a table the test
 * writes beside it, mig-standin.txt, read at nvmlInit:
 *
 *     gpu <minor> <mig mode 0|1|-1 not capable> <max MIG devices>
 *     mig <gpu index> <MIG index> <uuid> <GPU instance> <compute instance>
 *     err <gpu index> <MIG index> <nvml return code>     (GetMigDeviceHandleByIndex)
 *     crash                                              (nvmlInit aborts)
 *
 * Test code only: the product loads the mock library of native/nvml. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ret_t;
#define OK 0
#define INVALID_ARGUMENT 2
#define NOT_SUPPORTED 3
#define NOT_FOUND 6
#define MAX 64

struct mig { int present, code; char uuid[96]; unsigned gi, ci; };
struct gpu { unsigned minor, max; int mode; struct mig migs[MAX]; };
static struct gpu gpus[MAX];
static unsigned ngpus;
struct handle { unsigned gpu; int mig; };
static struct handle handles[MAX * (MAX + 1)];

static void load(void)
{
    Dl_info info;
    char path[4096];
    if (!dladdr((void *)load, &info) || !info.dli_fname)
        return;
    snprintf(path, sizeof path, "%s", info.dli_fname);
    char *slash = strrchr(path, '/');
    if (!slash)
        return;
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "mig-standin.txt");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512], uuid[96];
    unsigned a, b, c, d;
    int mode, code;
    ngpus = 0;
    memset(gpus, 0, sizeof gpus);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "crash", 5) == 0)
            abort();
        if (sscanf(line, "gpu %u %d %u", &a, &mode, &b) == 3 && ngpus < MAX) {
            gpus[ngpus].minor = a;
            gpus[ngpus].mode = mode;
            gpus[ngpus].max = b < MAX ? b : MAX;
            ngpus++;
        } else if (sscanf(line, "mig %u %u %95s %u %u", &a, &b, uuid, &c, &d) == 5 && a < MAX && b < MAX) {
            struct mig *m = &gpus[a].migs[b];
            m->present = 1;
            snprintf(m->uuid, sizeof m->uuid, "%s", uuid);
            m->gi = c;
            m->ci = d;
        } else if (sscanf(line, "err %u %u %d", &a, &b, &code) == 3 && a < MAX && b < MAX) {
            gpus[a].migs[b].code = code;
        }
    }
    fclose(f);
}

static struct handle *find(void *h) { return (struct handle *)h; }

ret_t nvmlInit_v2(void) { load(); return OK; }
ret_t nvmlShutdown(void) { return OK; }
const char *nvmlErrorString(ret_t r) { return r == OK ? "Success" : "Stand-in error"; }
ret_t nvmlMokkaGetNodePath(unsigned which, char *out, unsigned size)
{
    (void)which; (void)out; (void)size;
    return NOT_SUPPORTED;
}

ret_t nvmlDeviceGetCount_v2(unsigned *n) { *n = ngpus; return OK; }

ret_t nvmlDeviceGetHandleByIndex_v2(unsigned i, void **out)
{
    if (i >= ngpus)
        return INVALID_ARGUMENT;
    handles[i * (MAX + 1)] = (struct handle){i, -1};
    *out = &handles[i * (MAX + 1)];
    return OK;
}

ret_t nvmlDeviceGetMigMode(void *h, unsigned *cur, unsigned *pend)
{
    struct gpu *g = &gpus[find(h)->gpu];
    if (g->mode < 0)
        return NOT_SUPPORTED;
    *cur = *pend = (unsigned)g->mode;
    return OK;
}

ret_t nvmlDeviceGetMinorNumber(void *h, unsigned *minor) { *minor = gpus[find(h)->gpu].minor; return OK; }
ret_t nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned *n) { *n = gpus[find(h)->gpu].max; return OK; }

ret_t nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned j, void **out)
{
    unsigned i = find(h)->gpu;
    if (j >= MAX)
        return INVALID_ARGUMENT;
    struct mig *m = &gpus[i].migs[j];
    if (m->code)
        return m->code;
    if (!m->present)
        return NOT_FOUND;
    handles[i * (MAX + 1) + 1 + j] = (struct handle){i, (int)j};
    *out = &handles[i * (MAX + 1) + 1 + j];
    return OK;
}

static struct mig *mig_of(void *h)
{
    struct handle *x = find(h);
    return x->mig < 0 ? NULL : &gpus[x->gpu].migs[x->mig];
}

ret_t nvmlDeviceGetUUID(void *h, char *out, unsigned size)
{
    struct mig *m = mig_of(h);
    if (!m)
        return NOT_SUPPORTED;
    snprintf(out, size, "%s", m->uuid);
    return OK;
}

ret_t nvmlDeviceGetGpuInstanceId(void *h, unsigned *id)
{
    struct mig *m = mig_of(h);
    if (!m)
        return NOT_SUPPORTED;
    *id = m->gi;
    return OK;
}

ret_t nvmlDeviceGetComputeInstanceId(void *h, unsigned *id)
{
    struct mig *m = mig_of(h);
    if (!m)
        return NOT_SUPPORTED;
    *id = m->ci;
    return OK;
}
