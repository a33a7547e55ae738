/* The runtime overrides layer: the overrides directory beside config.yaml.
 *
 * One compiled document per scope (mokka/core/names.py): all.nvml for every
 * GPU, gpu<N>.nvml for physical GPU N, each beside its YAML. The pairs are
 * re-checked (a stat of each file) at most every CHECK_MS, so a change written
 * while a process runs is seen within a second. A new layer holding every
 * scope is swapped in under the lock; readers hold a reference, so the old one
 * is freed only when the last reader lets go. A companion that does not match
 * its YAML is given GRACE_MS to catch up (writers rename the two files one
 * after the other): while one is pending the layer in use stays; only a
 * mismatching pair that stays unchanged that long is reported, once, and that
 * scope ignored.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mock.h"

#define CHECK_MS 250
#define GRACE_MS 1000
#define ALL_SCOPE MOCK_MAX_GPUS           /* scopes 0..count-1 are GPUs; this one is `all` */

struct ovr_layer {
    unsigned int refs;
    struct flat scope[MOCK_MAX_GPUS + 1];
};

struct file_id {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    long long mtime_ns;
};

struct scope_files {
    struct file_id seen_yaml, seen_nvml;
    struct file_id bad_yaml, bad_nvml;     /* the mismatching pair being waited on */
    long long mismatch_since_ms;
};

struct mock_overrides {
    pthread_mutex_t lock;
    char dir[MOCK_PATH_MAX];
    unsigned int count;                    /* GPUs in the state */
    struct ovr_layer *cur;
    long long next_check_ms;
    int seen_valid;
    struct scope_files files[MOCK_MAX_GPUS + 1];
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct file_id file_id_of(const char *path)
{
    struct file_id id;
    struct stat st;
    memset(&id, 0, sizeof id);
    if (stat(path, &st) == 0) {
        id.present = 1;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.size = st.st_size;
        id.mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
    return id;
}

static int same_id(const struct file_id *a, const struct file_id *b)
{
    return a->present == b->present && (!a->present || (a->dev == b->dev && a->ino == b->ino &&
                                                        a->size == b->size && a->mtime_ns == b->mtime_ns));
}

static void layer_unref(struct ovr_layer *l)
{
    if (l && --l->refs == 0) {
        for (unsigned int s = 0; s <= MOCK_MAX_GPUS; s++)
            flat_free(&l->scope[s]);
        free(l);
    }
}

static int blank_file(const char *path)
{
    size_t len = 0;
    char *text = flat_read_file(path, &len);
    if (!text)
        return 0;
    int blank = 1;
    for (size_t i = 0; i < len; i++)
        blank &= isspace((unsigned char)text[i]) != 0;
    free(text);
    return blank;
}

enum scope_result { SCOPE_READY, SCOPE_PENDING };

struct scope_paths {
    char yaml[MOCK_PATH_MAX];
    char nvml[MOCK_PATH_MAX];
};

/* The pair of files of scope `s` (a physical GPU index, or ALL_SCOPE); empty paths
 * (no such file) when the directory's name leaves no room for them. */
static void paths_of(const struct mock_overrides *o, unsigned int s, struct scope_paths *p)
{
    int n = s == ALL_SCOPE
                ? snprintf(p->yaml, sizeof p->yaml, "%s/%s.yaml", o->dir, MOKKA_OVERRIDES_ALL_SCOPE)
                : snprintf(p->yaml, sizeof p->yaml, "%s/%s%u.yaml", o->dir, MOKKA_OVERRIDES_GPU_SCOPE_PREFIX, s);
    if (n < 0 || (size_t)n >= sizeof p->yaml)
        p->yaml[0] = '\0';
    config_companion_path(p->yaml, p->nvml, sizeof p->nvml);
}

static struct scope_files *files_of(struct mock_overrides *o, unsigned int s)
{
    return &o->files[s == ALL_SCOPE ? o->count : s];
}

/* Load scope `s` into *out (left empty when absent or ignored).
 * SCOPE_PENDING: a write may be in flight; keep the layer in use for now. */
static enum scope_result load_scope(struct mock_overrides *o, unsigned int s, long long now, int first,
                                    struct flat *out)
{
    struct scope_paths p;
    paths_of(o, s, &p);
    struct scope_files *sf = files_of(o, s);
    struct file_id y = file_id_of(p.yaml), c = file_id_of(p.nvml);
    memset(out, 0, sizeof *out);
    if (y.present) {
        enum flat_status st = flat_load(p.yaml, p.nvml, MOKKA_OVERRIDES_COMPANION_KIND, out);
        if (st != FLAT_OK && st != FLAT_YAML_MISSING && !blank_file(p.yaml)) {
            /* Writers rename the companion first: a companion no older than its
             * YAML is a write in flight (even at nvmlInit), while a YAML newer
             * than its companion was edited by hand. */
            int wait = !first || (c.present && c.mtime_ns >= y.mtime_ns);
            if (wait && (sf->mismatch_since_ms == 0 || !same_id(&y, &sf->bad_yaml) ||
                         !same_id(&c, &sf->bad_nvml))) {
                sf->bad_yaml = y;                 /* a new pair: the writer may be between renames */
                sf->bad_nvml = c;
                sf->mismatch_since_ms = now;
                return SCOPE_PENDING;
            }
            if (wait && now - sf->mismatch_since_ms < GRACE_MS)
                return SCOPE_PENDING;
            mock_say_no_companion("overrides", p.yaml, p.nvml);
        }
    }
    sf->mismatch_since_ms = 0;
    sf->seen_yaml = y;
    sf->seen_nvml = c;
    return SCOPE_READY;
}

static int scope_changed(struct mock_overrides *o, unsigned int s)
{
    struct scope_paths p;
    paths_of(o, s, &p);
    const struct scope_files *sf = files_of(o, s);
    struct file_id y = file_id_of(p.yaml), c = file_id_of(p.nvml);
    return !same_id(&y, &sf->seen_yaml) || !same_id(&c, &sf->seen_nvml);
}

/* Called with the lock held. `first`: at nvmlInit, report at once. */
static void reload(struct mock_overrides *o, long long now, int first)
{
    int changed = !o->seen_valid || scope_changed(o, ALL_SCOPE);
    for (unsigned int s = 0; s < o->count && !changed; s++)
        changed = scope_changed(o, s);
    if (!changed)
        return;
    struct ovr_layer *l = calloc(1, sizeof *l);
    if (!l)
        return;
    l->refs = 1;
    int any = 0;
    for (unsigned int s = 0; s <= o->count; s++) {
        unsigned int slot = s == o->count ? ALL_SCOPE : s;
        if (load_scope(o, slot, now, first, &l->scope[slot]) == SCOPE_PENDING) {
            layer_unref(l);
            return;
        }
        any |= l->scope[slot].n > 0;
    }
    o->seen_valid = 1;
    struct ovr_layer *old = o->cur;
    o->cur = any ? l : NULL;
    if (!any)
        layer_unref(l);
    layer_unref(old);
}

struct mock_overrides *overrides_open(const char *dir, unsigned int count)
{
    struct mock_overrides *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    pthread_mutex_init(&o->lock, NULL);
    o->count = count > MOCK_MAX_GPUS ? MOCK_MAX_GPUS : count;
    snprintf(o->dir, sizeof o->dir, "%s", dir);
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        mock_warn_once("ignoring overrides %s: not a directory (it holds %s.yaml and %s<N>.yaml)", dir,
                       MOKKA_OVERRIDES_ALL_SCOPE, MOKKA_OVERRIDES_GPU_SCOPE_PREFIX);
    return o;
}

void overrides_start(struct mock_overrides *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    long long now = now_ms();
    reload(o, now, 1);
    o->next_check_ms = now + CHECK_MS;
    pthread_mutex_unlock(&o->lock);
}

struct ovr_layer *overrides_acquire(struct mock_overrides *o)
{
    if (!o)
        return NULL;
    pthread_mutex_lock(&o->lock);
    long long now = now_ms();
    if (now >= o->next_check_ms) {
        o->next_check_ms = now + CHECK_MS;
        reload(o, now, 0);
    }
    struct ovr_layer *l = o->cur;
    if (l)
        l->refs++;
    pthread_mutex_unlock(&o->lock);
    return l;
}

void overrides_release(struct mock_overrides *o, struct ovr_layer *l)
{
    if (!o || !l)
        return;
    pthread_mutex_lock(&o->lock);
    layer_unref(l);
    pthread_mutex_unlock(&o->lock);
}

const struct flat *overrides_gpu(const struct ovr_layer *l, unsigned int phys)
{
    return l && phys < MOCK_MAX_GPUS ? &l->scope[phys] : NULL;
}

const struct flat *overrides_all(const struct ovr_layer *l)
{
    return l ? &l->scope[ALL_SCOPE] : NULL;
}
