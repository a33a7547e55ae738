/* The node's settings (settings.h): what NVML's setters set, one truth for every
 * process on the node and in every injected container, kept in settings.nvml beside
 * config.yaml (settings_file.c is its form).
 *
 * Reading, as the MIG partitions (../mig/mig_state.c): each process keeps the
 * settings it last read and looks at the file again (one stat) at most every
 * CHECK_MS. A file that is absent, or that holds what the board does not allow (a
 * workload may write it: a power limit past the board's limits, clocks it does not
 * support, another node's GPUs), leaves every reading the board's; a bad file is
 * named once, on one line.
 *
 * Writing: a change is a read-modify-write of the whole file under the config
 * directory's flock, the lock mig.nvml's writer takes, with the same bounded wait
 * (names.MIG_LOCK_WAIT_MS): a workload holding it makes changes fail with In Use.
 * Readers never lock: the file is replaced by rename, whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "docfile.h"
#include "engine.h"
#include "file_id.h"

#define CHECK_MS 250

struct mock_settings {
    char dir[MOCK_PATH_MAX];                      /* the directory of config.yaml */
    char path[MOCK_PATH_MAX + 16];                /* settings.nvml in it, for messages */
    pthread_mutex_t lock;                         /* the cache below */
    int loaded;
    struct file_id seen;
    long long next_check_ms;
    struct gpu_settings gpus[MOCK_MAX_GPUS];
};

struct mock_settings *settings_open(const struct mock_node *n)
{
    struct mock_settings *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->lock, NULL);
    snprintf(m->dir, sizeof m->dir, "%s", n->config_yaml);    /* absolute (config_locate) */
    char *slash = strrchr(m->dir, '/');
    if (slash)
        *(slash == m->dir ? slash + 1 : slash) = '\0';
    snprintf(m->path, sizeof m->path, "%s/%s", m->dir, MOKKA_SETTINGS_STATE_FILE);
    return m;
}

void settings_free(struct mock_settings *m)
{
    if (m)
        pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The GPU's UUID as the state has it, read past every layer ("" when none). */
static void state_uuid(const struct mock_gpu *g, char out[SETTINGS_UUID_MAX])
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", g->base, K_UUID);
    const char *v = flat_get(&g->node->state, key);
    snprintf(out, SETTINGS_UUID_MAX, "%s", v && strlen(v) < SETTINGS_UUID_MAX ? v : "");
}

/* Why GPU g's settings are none it can have, or NULL. */
static const char *not_allowed(const struct mock_gpu *g, const struct gpu_settings *s)
{
    unsigned int lo, hi;
    if (s->power_limit_mw && !settings_power_allowed(g, s->power_limit_mw))
        return "a power limit outside the board's limits";
    if (s->app_memory_mhz && !settings_clocks_supported(g, s->app_memory_mhz, s->app_graphics_mhz))
        return "application clocks the board does not support";
    if (s->locked_max_mhz &&
        (!settings_graphics_range(g, &lo, &hi) || s->locked_min_mhz < lo || s->locked_max_mhz > hi))
        return "locked clocks outside the board's clocks";
    if (s->mem_locked_max_mhz &&
        (!settings_memory_range(g, &lo, &hi) || s->mem_locked_min_mhz < lo || s->mem_locked_max_mhz > hi))
        return "locked memory clocks outside the board's clocks";
    if (s->ecc_current >= 0 && !settings_ecc_supported(g))
        return "an ECC mode for a GPU without ECC";
    return NULL;
}

/* --- the file's content as settings, and back ------------------------------------------ */

static const char *from_text(const struct mock_node *n, char *text, size_t len, struct gpu_settings *gpus, int *holds)
{
    struct settings_file *f = malloc(sizeof *f);
    if (!f)
        return "cannot be read (no memory)";
    const char *why = settings_file_parse(text, len, n->count, f, holds);
    for (unsigned int p = 0; p < n->count && !why; p++) {
        const struct settings_file_gpu *fg = &f->gpu[p];
        char uuid[SETTINGS_UUID_MAX];
        if (!fg->present)
            continue;
        state_uuid(&n->gpus[p], uuid);
        if (fg->uuid[0] && strcasecmp(fg->uuid, uuid) != 0) {
            why = "was written for other GPUs (their UUIDs differ)";
        } else if ((why = not_allowed(&n->gpus[p], &fg->s)) != NULL) {
            *holds = 1;
        } else {
            gpus[p] = fg->s;
        }
    }
    free(f);
    return why;
}

static const char *write_file(const struct mock_node *n, int dirfd, const struct gpu_settings *gpus)
{
    struct settings_file *f = calloc(1, sizeof *f);
    if (!f)
        return "cannot be written (no memory)";
    for (unsigned int p = 0; p < n->count; p++) {
        f->gpu[p].present = 1;
        f->gpu[p].s = gpus[p];
        state_uuid(&n->gpus[p], f->gpu[p].uuid);
    }
    const char *why = settings_file_write(dirfd, f, n->count);
    free(f);
    return why;
}

/* Every GPU's settings as they are on disk now (none where the file says nothing). */
static void load(const struct mock_node *n, int dirfd, struct gpu_settings *gpus)
{
    struct mock_settings *m = n->settings;
    for (unsigned int p = 0; p < n->count; p++)
        settings_clear(&gpus[p]);
    int own = dirfd < 0;
    if (own)
        dirfd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *text = NULL;
    size_t len = 0;
    int holds = 0;
    const char *why = dirfd < 0 ? DOCFILE_ABSENT : settings_file_read(dirfd, &text, &len);
    if (own && dirfd >= 0)
        close(dirfd);
    if (why == NULL) {
        struct gpu_settings *read = malloc(n->count * sizeof *read + 1);
        if (read) {
            memcpy(read, gpus, n->count * sizeof *read);
            why = from_text(n, text, len, read, &holds);
            if (!why)
                memcpy(gpus, read, n->count * sizeof *read);
            free(read);
        }
    }
    free(text);
    if (why && why != DOCFILE_ABSENT)
        mock_warn_once("ignoring %s: it %s%s: the board's own settings apply until a setter rewrites it",
                       m->path, holds ? "holds " : "", why);
}

/* With m->lock held. */
static void refresh(const struct mock_node *n, long long now)
{
    struct mock_settings *m = n->settings;
    if (m->loaded && now < m->next_check_ms)
        return;
    m->next_check_ms = now + CHECK_MS;
    struct file_id id = file_id_at(AT_FDCWD, m->path);
    if (m->loaded && file_id_same(&id, &m->seen))
        return;
    load(n, -1, m->gpus);
    m->seen = id;
    m->loaded = 1;
}

void settings_get(const struct mock_node *n, unsigned int phys, struct gpu_settings *out)
{
    settings_clear(out);
    struct mock_settings *m = n->settings;
    if (!m || phys >= n->count)
        return;
    pthread_mutex_lock(&m->lock);
    refresh(n, monotonic_ms());
    *out = m->gpus[phys];
    pthread_mutex_unlock(&m->lock);
}

/* --- the readings they stand for --------------------------------------------------------- */

static const char *const COMPUTE_WORDS[NVML_COMPUTEMODE_COUNT] = {
    [NVML_COMPUTEMODE_DEFAULT] = "Default", [NVML_COMPUTEMODE_EXCLUSIVE_THREAD] = "Exclusive_Thread",
    [NVML_COMPUTEMODE_PROHIBITED] = "Prohibited", [NVML_COMPUTEMODE_EXCLUSIVE_PROCESS] = "Exclusive_Process"};

static int is_setting(const char *key)
{
    static const char *const keys[] = {K_POWER_ENFORCED_LIMIT_MW, K_PERSISTENCE_MODE, K_COMPUTE_MODE, K_ACCOUNTING_MODE,
                                       K_CLOCKS_GRAPHICS_APP, K_CLOCKS_MEMORY_APP,
                                       K_ECC_MODE_CURRENT, K_ECC_MODE_PENDING,
                                       K_CLOCKS_THROTTLE_REASONS_SW_POWER_CAP};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0)
            return 1;
    return 0;
}

int settings_value(const struct mock_gpu *g, const char *key, char *out, size_t size)
{
    if (!is_setting(key))                         /* before the lock: the checks above read other keys */
        return 0;
    struct gpu_settings s;
    settings_get(g->node, g->phys, &s);
    int n = -1;
    if (strcmp(key, K_POWER_ENFORCED_LIMIT_MW) == 0 && s.power_limit_mw)
        n = snprintf(out, size, "%u", s.power_limit_mw);
    else if (strcmp(key, K_PERSISTENCE_MODE) == 0 && s.persistence >= 0)
        n = snprintf(out, size, "%s", s.persistence ? "Enabled" : "Disabled");
    else if (strcmp(key, K_ACCOUNTING_MODE) == 0 && s.accounting >= 0)
        n = snprintf(out, size, "%s", s.accounting ? "Enabled" : "Disabled");
    else if (strcmp(key, K_COMPUTE_MODE) == 0 && s.compute_mode >= 0)
        n = snprintf(out, size, "%s", COMPUTE_WORDS[s.compute_mode]);
    else if (strcmp(key, K_CLOCKS_GRAPHICS_APP) == 0 && s.app_graphics_mhz)
        n = snprintf(out, size, "%u", s.app_graphics_mhz);
    else if (strcmp(key, K_CLOCKS_MEMORY_APP) == 0 && s.app_memory_mhz)
        n = snprintf(out, size, "%u", s.app_memory_mhz);
    else if (strcmp(key, K_ECC_MODE_CURRENT) == 0 && s.ecc_current >= 0)
        n = snprintf(out, size, "%s", s.ecc_current ? "Enabled" : "Disabled");
    else if (strcmp(key, K_ECC_MODE_PENDING) == 0 && s.ecc_pending >= 0)
        n = snprintf(out, size, "%s", s.ecc_pending ? "Enabled" : "Disabled");
    else if (strcmp(key, K_CLOCKS_THROTTLE_REASONS_SW_POWER_CAP) == 0 && s.power_limit_mw) {
        unsigned long long draw;                  /* capped (settings_capped): at the limit, it is held there */
        if (gpu_u64(g, K_POWER_CURRENT_DRAW_MW, &draw) && draw >= s.power_limit_mw)
            n = snprintf(out, size, "true");
    }
    return n >= 0 && (size_t)n < size;
}

static unsigned long long within(unsigned long long v, unsigned int lo, unsigned int hi)
{
    return v > hi ? hi : v < lo ? lo : v;
}

#define ECC_COUNT_KEYS(SCOPE)                                                                          \
    {K_ECC_ERRORS_##SCOPE##_SINGLE_BIT_L1_CACHE, K_ECC_ERRORS_##SCOPE##_SINGLE_BIT_L2_CACHE,             \
     K_ECC_ERRORS_##SCOPE##_SINGLE_BIT_DEVICE_MEMORY, K_ECC_ERRORS_##SCOPE##_SINGLE_BIT_REGISTER_FILE,   \
     K_ECC_ERRORS_##SCOPE##_SINGLE_BIT_TEXTURE_MEMORY, K_ECC_ERRORS_##SCOPE##_SINGLE_BIT_TOTAL,          \
     K_ECC_ERRORS_##SCOPE##_DOUBLE_BIT_L1_CACHE, K_ECC_ERRORS_##SCOPE##_DOUBLE_BIT_L2_CACHE,             \
     K_ECC_ERRORS_##SCOPE##_DOUBLE_BIT_DEVICE_MEMORY, K_ECC_ERRORS_##SCOPE##_DOUBLE_BIT_REGISTER_FILE,   \
     K_ECC_ERRORS_##SCOPE##_DOUBLE_BIT_TEXTURE_MEMORY, K_ECC_ERRORS_##SCOPE##_DOUBLE_BIT_TOTAL,          \
     K_ECC_SRAM_##SCOPE##_CORRECTABLE, K_ECC_SRAM_##SCOPE##_UNCORRECTABLE,                               \
     K_ECC_SRAM_##SCOPE##_UNCORRECTABLE_PARITY, K_ECC_SRAM_##SCOPE##_UNCORRECTABLE_SECDED}

const char *const settings_ecc_keys[2][SETTINGS_ECC_COUNTS] = {
    [NVML_VOLATILE_ECC] = ECC_COUNT_KEYS(VOLATILE), [NVML_AGGREGATE_ECC] = ECC_COUNT_KEYS(AGGREGATE)};

/* Set while a clearing reads the counts it sets back, and while ctl reads what it adds
 * to (settings_whole_counts): the thread reads them whole, ECC counts and NVLink error
 * counters alike. */
static __thread int reading_whole_counts;

void settings_whole_counts(int whole)
{
    reading_whole_counts = whole;
}

/* Which ECC count `key` is: 1 and its scope and index, or 0. */
static int ecc_count_of(const char *key, int *scope, unsigned int *i)
{
    if (key[0] != settings_ecc_keys[0][0][0])     /* most keys: not a count (all start alike) */
        return 0;
    for (*scope = 0; *scope < 2; (*scope)++)
        for (*i = 0; *i < SETTINGS_ECC_COUNTS; (*i)++)
            if (strcmp(key, settings_ecc_keys[*scope][*i]) == 0)
                return 1;
    return 0;
}

unsigned long long settings_capped(const struct mock_gpu *g, const char *key, unsigned long long value)
{
    int scope;
    unsigned int i;
    if (!reading_whole_counts && ecc_count_of(key, &scope, &i)) {
        struct gpu_settings s;                    /* a count that fell below its baseline started again */
        settings_get(g->node, g->phys, &s);
        return s.ecc_cleared[scope] && value >= s.ecc_base[scope][i] ? value - s.ecc_base[scope][i] : value;
    }
    int clock = strcmp(key, K_CLOCKS_GRAPHICS_CURRENT) == 0 || strcmp(key, K_CLOCKS_SM_CURRENT) == 0;
    int memory = strcmp(key, K_CLOCKS_MEMORY_CURRENT) == 0;
    int draw = strcmp(key, K_POWER_CURRENT_DRAW_MW) == 0 || strcmp(key, K_POWER_AVERAGE_DRAW_MW) == 0;
    if (!clock && !memory && !draw)
        return value;
    struct gpu_settings s;
    settings_get(g->node, g->phys, &s);
    if (clock && s.locked_max_mhz)
        return within(value, s.locked_min_mhz, s.locked_max_mhz);
    if (memory && s.mem_locked_max_mhz)
        return within(value, s.mem_locked_min_mhz, s.mem_locked_max_mhz);
    if (draw && s.power_limit_mw && value > s.power_limit_mw)
        return s.power_limit_mw;                  /* the board holds its draw at the limit (SW power cap) */
    return value;
}

/* --- changes ------------------------------------------------------------------------------ */

nvmlReturn_t settings_change(const struct mock_node *n, unsigned int phys, settings_edit edit, void *arg)
{
    struct mock_settings *m = n->settings;
    if (!m || phys >= n->count)
        return NVML_ERROR_NOT_SUPPORTED;
    int dirfd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        mock_say("cannot change a setting: %s cannot be opened: %s", m->dir, strerror(errno));
        return NVML_ERROR_NO_PERMISSION;
    }
    if (!docfile_lock(dirfd, MOKKA_MIG_LOCK_WAIT_MS)) {
        mock_say("cannot change a setting: %s is locked by another process for over %d ms "
                 "(its holder is in /proc/locks)", m->dir, MOKKA_MIG_LOCK_WAIT_MS);
        close(dirfd);
        return NVML_ERROR_IN_USE;
    }
    struct gpu_settings *gpus = malloc(MOCK_MAX_GPUS * sizeof *gpus);   /* too large for a thread's stack */
    if (!gpus) {
        close(dirfd);
        return NVML_ERROR_MEMORY;
    }
    load(n, dirfd, gpus);
    struct gpu_settings before = gpus[phys];
    nvmlReturn_t ret = edit(&n->gpus[phys], &gpus[phys], arg);
    if (ret != NVML_SUCCESS)
        gpus[phys] = before;
    int changed = memcmp(&before, &gpus[phys], sizeof before) != 0;
    if (ret == NVML_SUCCESS && changed) {
        const char *why = write_file(n, dirfd, gpus);
        if (why) {
            mock_say("cannot change a setting: %s %s", m->path, why);
            ret = why == DOCFILE_NO_PERMISSION ? NVML_ERROR_NO_PERMISSION : NVML_ERROR_UNKNOWN;
            load(n, dirfd, gpus);                 /* the write failed: the file as it is */
        }
    }
    pthread_mutex_lock(&m->lock);                 /* what is on disk now */
    memcpy(m->gpus, gpus, n->count * sizeof gpus[0]);
    m->seen = file_id_at(AT_FDCWD, m->path);
    m->loaded = 1;
    m->next_check_ms = monotonic_ms() + CHECK_MS;
    pthread_mutex_unlock(&m->lock);
    close(dirfd);                                 /* and with it the lock */
    free(gpus);
    return ret;
}

static nvmlReturn_t reset_edit(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    (void)arg;
    int ecc = s->ecc_pending, cleared = s->ecc_cleared[NVML_AGGREGATE_ECC];
    unsigned int base[SETTINGS_ECC_COUNTS];
    memcpy(base, s->ecc_base[NVML_AGGREGATE_ECC], sizeof base);
    settings_clear(s);                            /* the NVLink resets too: the reset clears their counters */
    if (ecc >= 0)                                 /* ECC mode survives a reset: the pending one applies */
        s->ecc_current = s->ecc_pending = ecc;
    s->ecc_cleared[NVML_AGGREGATE_ECC] = cleared;  /* and so do the aggregate counts, and their clearing */
    memcpy(s->ecc_base[NVML_AGGREGATE_ECC], base, sizeof base);
    return NVML_SUCCESS;
}

/* The clearing: each count of the scope as it is now becomes its zero. */
static nvmlReturn_t clear_ecc_edit(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    int scope = *(int *)arg, was = reading_whole_counts;
    reading_whole_counts = 1;
    for (unsigned int i = 0; i < SETTINGS_ECC_COUNTS; i++) {
        unsigned long long v = 0;
        gpu_u64(g, settings_ecc_keys[scope][i], &v);
        s->ecc_base[scope][i] = v > 0xffffffffu ? 0xffffffffu : (unsigned int)v;
    }
    reading_whole_counts = was;
    s->ecc_cleared[scope] = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t settings_clear_ecc(const struct mock_node *n, unsigned int phys, int scope)
{
    return settings_change(n, phys, clear_ecc_edit, &scope);
}

unsigned long long settings_nvlink_error(const struct mock_gpu *g, unsigned int link, unsigned int counter,
                                         unsigned long long whole)
{
    if (reading_whole_counts || link >= SETTINGS_NVLINK_LINKS || counter >= SETTINGS_NVLINK_COUNTERS)
        return whole;
    struct gpu_settings s;
    settings_get(g->node, g->phys, &s);
    unsigned long long base = s.nvlink_base[link][counter];
    return whole >= base ? whole - base : whole;
}

struct nvlink_reset {
    unsigned int link;
    const unsigned long long *whole;
};

static nvmlReturn_t reset_nvlink_edit(const struct mock_gpu *g, struct gpu_settings *s, void *arg)
{
    (void)g;
    const struct nvlink_reset *r = arg;
    memcpy(s->nvlink_base[r->link], r->whole, sizeof s->nvlink_base[r->link]);
    return NVML_SUCCESS;
}

nvmlReturn_t settings_reset_nvlink(const struct mock_node *n, unsigned int phys, unsigned int link,
                                   const unsigned long long *whole)
{
    if (link >= SETTINGS_NVLINK_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvlink_reset r = {link, whole};
    return settings_change(n, phys, reset_nvlink_edit, &r);
}

nvmlReturn_t settings_reset(const struct mock_node *n, unsigned int phys)
{
    return settings_change(n, phys, reset_edit, NULL);
}
