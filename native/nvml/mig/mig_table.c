/* The MIG table a GPU's profile declares (one of the state's mig_tables, shared by
 * the GPUs of one board; the GPU's mig.table names it), and the GPU instances it
 * boots with (mig.boot: the chosen layout, placed by compile), read from the node's
 * compiled state the first time a MIG call needs it.
 *
 * The state is a file a workload can write, so every number is bounded before it
 * is kept: a profile index NVML does not have, a placement that does not fit the
 * eight memory slices or that no GPU instance id names, more placements or
 * compute instance profiles than there is room for: that profile is left out
 * (one line says which), and the board keeps the rest of its table.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mig.h"

#define KEY_MAX 160

struct reader {
    const struct mock_node *n;
    char base[32];                                /* "gpu.<phys>." or "mig_tables.<n>." */
};

static const char *get(const struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static const char *get(const struct reader *r, const char *fmt, ...)
{
    char key[KEY_MAX];
    size_t len = strlen(r->base);
    memcpy(key, r->base, len + 1);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(key + len, sizeof key - len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof key - len)
        return NULL;
    return node_get(r->n, key);
}

/* A whole number no larger than `max`: 1; else 0. */
static int bounded(const char *v, unsigned long long max, unsigned int *out)
{
    unsigned long long x;
    if (!flat_parse_u64(v, &x) || x > max)
        return 0;
    *out = (unsigned int)x;
    return 1;
}

static int truthy(const char *v)
{
    return v && (strcasecmp(v, "true") == 0 || strcasecmp(v, "enabled") == 0);
}

static void copy_name(char *out, const char *v)
{
    snprintf(out, MIG_NAME_MAX, "%s", v ? v : "");
}

static int read_ci(const struct reader *r, unsigned int i, unsigned int j, struct mig_gi_profile *gi)
{
    unsigned int index;
    if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_INDEX, i, j),
                 MIG_CI_PROFILES - 1, &index))
        return 0;
    struct mig_ci_profile *c = &gi->ci[index];
    if (c->present)
        return 0;                                 /* one profile per index */
    if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_ID, i, j), 0xffffffffu, &c->id) ||
        !bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_SLICES, i, j), gi->slices,
                 &c->slices) || c->slices == 0 ||
        !bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_INSTANCES, i, j), MIG_CI_IDS,
                 &c->instances) ||
        !bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_MULTIPROCESSORS, i, j),
                 0xffffffffu, &c->multiprocessors))
        return 0;
    copy_name(c->name, get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_NAME, i, j));
    unsigned int n = 0;
    const char *len = get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_PLACEMENTS_LEN, i, j);
    if (len && !bounded(len, MIG_MEMORY_SLICES, &n))
        return 0;
    for (unsigned int k = 0; k < n; k++) {
        unsigned int start;
        if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_N_PLACEMENTS_N, i, j, k),
                     MIG_MEMORY_SLICES - 1, &start) || start + c->slices > gi->slices)
            return 0;
        c->placement_start[k] = start;
    }
    c->nplacements = n;
    c->present = 1;
    return 1;
}

static int read_placements(const struct reader *r, unsigned int i, struct mig_gi_profile *p)
{
    unsigned int n;
    if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_PLACEMENT_SIZE, i), MIG_MEMORY_SLICES, &p->placement_size) ||
        !bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_PLACEMENTS_LEN, i), MIG_MEMORY_SLICES, &n) || n == 0)
        return 0;
    for (unsigned int k = 0; k < n; k++) {
        unsigned int start;
        if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_PLACEMENTS_N, i, k), MIG_MEMORY_SLICES - 1,
                     &start) || mig_gi_id_of(start, p->placement_size) < 0)
            return 0;
        p->placement_start[k] = start;
    }
    p->nplacements = n;
    return 1;
}

/* Item i of mig.gpu_instance_profiles into t: 1, or 0 when it is not a profile NVML can have. */
static int read_gi(const struct reader *r, unsigned int i, struct mig_table *t)
{
    unsigned int index, nci;
    if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_INDEX, i), MIG_GI_PROFILES - 1, &index) ||
        t->gi[index].present)
        return 0;
    struct mig_gi_profile p;
    memset(&p, 0, sizeof p);
    unsigned long long memory;
    if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_ID, i), 0xffffffffu, &p.id) ||
        !bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_SLICES, i), MIG_MEMORY_SLICES, &p.slices) || p.slices == 0 ||
        !bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_INSTANCES, i), MIG_MAX_GIS, &p.instances) ||
        !flat_parse_u64(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_MEMORY_MIB, i), &memory) ||
        !read_placements(r, i, &p))
        return 0;
    p.memory_mib = memory;
    unsigned int *counts[] = {&p.multiprocessors, &p.copy_engines, &p.decoders, &p.encoders, &p.jpegs, &p.ofas};
    const char *keys[] = {MIG_TABLE_GPU_INSTANCE_PROFILES_N_MULTIPROCESSORS, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COPY_ENGINES,
                          MIG_TABLE_GPU_INSTANCE_PROFILES_N_DECODERS, MIG_TABLE_GPU_INSTANCE_PROFILES_N_ENCODERS,
                          MIG_TABLE_GPU_INSTANCE_PROFILES_N_JPEGS, MIG_TABLE_GPU_INSTANCE_PROFILES_N_OFAS};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        char key[KEY_MAX];
        snprintf(key, sizeof key, keys[k], i);
        *counts[k] = 0;                           /* an engine the profile leaves out: none */
        const char *v = get(r, "%s", key);
        if (v && !bounded(v, 0xffffffffu, counts[k]))
            return 0;
    }
    p.p2p = truthy(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_P2P, i));
    copy_name(p.name, get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_NAME, i));
    if (!bounded(get(r, MIG_TABLE_GPU_INSTANCE_PROFILES_N_COMPUTE_INSTANCE_PROFILES_LEN, i), MIG_CI_PROFILES, &nci))
        nci = 0;
    for (unsigned int j = 0; j < nci; j++)
        if (!read_ci(r, i, j, &p))
            return 0;
    p.present = 1;
    t->gi[index] = p;
    return 1;
}

/* mig.boot: (profile ID, placement) of each GPU instance the profile boots with. */
static void read_boot(const struct reader *r, struct mig_table *t)
{
    unsigned int n;
    if (!bounded(get(r, K_MIG_BOOT_LEN), MIG_MAX_GIS, &n))
        return;
    for (unsigned int k = 0; k < n; k++) {
        unsigned int id, start, size;
        int p = -1;
        if (bounded(get(r, K_MIG_BOOT_N_PROFILE_ID, k), 0xffffffffu, &id) &&
            bounded(get(r, K_MIG_BOOT_N_PLACEMENT_START, k), MIG_MEMORY_SLICES - 1, &start) &&
            bounded(get(r, K_MIG_BOOT_N_PLACEMENT_SIZE, k), MIG_MEMORY_SLICES, &size))
            p = mig_gi_profile_by_id(t, id);
        if (p < 0 || size != t->gi[p].placement_size) {
            mock_warn_once("ignoring GPU instances the GPUs boot with in %s that are not of their board's "
                           "profiles and placements: recompile the profile", r->n->config_yaml);
            continue;
        }
        t->boot[t->nboot].profile = (unsigned int)p;
        t->boot[t->nboot].start = start;
        t->nboot++;
    }
}

/* Item k of the state's mig_tables: its GPU instance profiles into t->gi; 0 when it
 * has none NVML can have. */
static int read_profiles(const struct mock_node *n, unsigned int k, struct mig_table *t)
{
    struct reader r = {.n = n};
    snprintf(r.base, sizeof r.base, NODE_MIG_TABLES_N ".", k);
    unsigned int count;
    if (!bounded(get(&r, MIG_TABLE_GPU_INSTANCE_PROFILES_LEN), 64, &count) || count == 0)
        return 0;
    for (unsigned int i = 0; i < count; i++)
        if (!read_gi(&r, i, t))                   /* one line for the node, however many */
            mock_warn_once("ignoring MIG profiles in %s that NVML cannot have (index, id, slices, "
                           "placements out of range): recompile the profile", n->config_yaml);
    int any = 0;
    for (unsigned int p = 0; p < MIG_GI_PROFILES; p++)
        any |= t->gi[p].present;
    return any;
}

/* --- one table per GPU, read once ------------------------------------------------ */

/* The GPUs of one board share their partition table (mig_tables), so each is parsed
 * once, however many GPUs name it; a GPU's own table copies it and adds its modes
 * and boot layout. */
struct mig_tables {
    pthread_mutex_t lock;
    unsigned char read[MOCK_MAX_GPUS];
    struct mig_table *table[MOCK_MAX_GPUS];          /* by physical GPU */
    unsigned char shared_read[MOCK_MAX_GPUS];
    struct mig_table *shared[MOCK_MAX_GPUS];         /* by item of mig_tables: profiles only */
};

static const struct mig_table *shared_profiles(struct mig_tables *ts, const struct mock_node *n,
                                               unsigned int k)
{
    if (!ts->shared_read[k]) {
        ts->shared_read[k] = 1;
        struct mig_table *t = calloc(1, sizeof *t);
        if (t && !read_profiles(n, k, t)) {
            free(t);
            t = NULL;
        }
        ts->shared[k] = t;
    }
    return ts->shared[k];
}

static struct mig_table *read_table(struct mig_tables *ts, const struct mock_node *n, unsigned int phys)
{
    struct reader r = {.n = n};
    snprintf(r.base, sizeof r.base, NODE_GPU_N ".", phys);
    unsigned int k, max_devices = 0;
    bounded(get(&r, K_MIG_MAX_GPU_INSTANCES), 64, &max_devices);
    if (!get(&r, K_MIG_TABLE)) {                  /* no profiles declared */
        if (max_devices == 0)
            return NULL;                          /* not MIG-capable */
        struct mig_table *t = calloc(1, sizeof *t);
        if (t) {
            t->max_devices = max_devices;
            t->unpublished = 1;                   /* nothing to boot: disabled, whatever it says */
        }
        return t;
    }
    if (!bounded(get(&r, K_MIG_TABLE), MOCK_MAX_GPUS - 1, &k))
        return NULL;
    const struct mig_table *profiles = shared_profiles(ts, n, k);
    if (!profiles)
        return NULL;
    struct mig_table *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    *t = *profiles;
    t->max_devices = max_devices;
    t->boot_current = truthy(get(&r, K_MIG_MODE_CURRENT));
    t->boot_pending = get(&r, K_MIG_MODE_PENDING) ? truthy(get(&r, K_MIG_MODE_PENDING)) : t->boot_current;
    read_boot(&r, t);
    return t;
}

struct mig_tables *mig_tables_open(void)
{
    struct mig_tables *ts = calloc(1, sizeof *ts);
    if (ts)
        pthread_mutex_init(&ts->lock, NULL);
    return ts;
}

void mig_tables_free(struct mig_tables *ts)
{
    if (!ts)
        return;
    for (unsigned int i = 0; i < MOCK_MAX_GPUS; i++) {
        free(ts->table[i]);
        free(ts->shared[i]);
    }
    pthread_mutex_destroy(&ts->lock);
    free(ts);
}

const struct mig_table *mig_tables_get(struct mig_tables *ts, const struct mock_node *n, unsigned int phys)
{
    if (!ts || phys >= n->count)
        return NULL;
    if (__atomic_load_n(&ts->read[phys], __ATOMIC_ACQUIRE))
        return ts->table[phys];
    pthread_mutex_lock(&ts->lock);
    if (!ts->read[phys]) {
        ts->table[phys] = read_table(ts, n, phys);
        __atomic_store_n(&ts->read[phys], 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&ts->lock);
    return ts->table[phys];
}

int mig_gi_profile_by_id(const struct mig_table *t, unsigned int id)
{
    for (unsigned int p = 0; p < MIG_GI_PROFILES; p++)
        if (t->gi[p].present && t->gi[p].id == id)
            return (int)p;
    return -1;
}

int mig_ci_profile_by_id(const struct mig_gi_profile *gi, unsigned int id)
{
    for (unsigned int c = 0; c < MIG_CI_PROFILES; c++)
        if (gi->ci[c].present && gi->ci[c].id == id)
            return (int)c;
    return -1;
}
