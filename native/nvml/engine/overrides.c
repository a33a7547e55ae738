/* The runtime overrides layer: the overrides directory beside config.yaml.
 *
 * One compiled document per scope (mokka/core/names.py): all.nvml for every
 * GPU, gpu<N>.nvml for physical GPU N, lasting-gpu<N>.nvml for what a reset of
 * GPU N keeps (the aggregate ECC counts and remapped rows `mokka ctl ecc` raises),
 * each beside its YAML. The pairs are
 * re-checked (a stat of each file) at most every CHECK_MS, so a change written
 * while a process runs is seen within a second. A new layer holding every
 * scope is swapped in under the lock; readers hold a reference, so the old one
 * is freed only when the last reader lets go. A companion that does not match
 * its YAML is given GRACE_MS to catch up (writers rename the two files one
 * after the other): while one is pending the layer in use stays; only a
 * mismatching pair that stays unchanged that long is reported, once, and that
 * scope ignored.
 *
 * The directory is writable by every injected container, so it is opened afresh
 * at each check without following it (a link in its place is refused) and each
 * document is read relative to it (flat.h): no file a workload swaps in can be
 * followed, block the open under the lock, or be trusted in part.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "file_id.h"

#define CHECK_MS 250
#define GRACE_MS 1000
#define ALL_SCOPE MOCK_MAX_GPUS           /* scopes 0..count-1 are GPUs; this one is `all` */
#define LASTING_SCOPE(p) (MOCK_MAX_GPUS + 1 + (p))   /* what a reset of GPU p keeps */
#define SCOPES (2 * MOCK_MAX_GPUS + 1)

struct ovr_layer {
    unsigned int refs;
    struct flat scope[SCOPES];
};

struct scope_files {
    struct file_id seen_yaml, seen_nvml;
    struct file_id bad_yaml, bad_nvml;     /* the mismatching pair being waited on */
    long long mismatch_since_ms;
    struct file_id named_yaml, named_nvml; /* the pair last named unusable: not waited on again */
};

struct mock_overrides {
    pthread_mutex_t lock;
    char dir[MOCK_PATH_MAX];
    unsigned int count;                    /* GPUs in the state */
    struct ovr_layer *cur;
    long long next_check_ms;
    int seen_valid;
    struct scope_files files[SCOPES];
};

static void layer_unref(struct ovr_layer *l)
{
    if (l && --l->refs == 0) {
        for (unsigned int s = 0; s < SCOPES; s++)
            flat_free(&l->scope[s]);
        free(l);
    }
}

enum scope_result { SCOPE_READY, SCOPE_PENDING };

struct scope_paths {
    char yaml[MOCK_PATH_MAX];              /* for messages: the directory's path and the name */
    char nvml[MOCK_PATH_MAX];
    char yaml_name[32];                    /* what is opened, relative to the directory */
    char nvml_name[32];
};

/* The pair of files of scope `s` (a physical GPU index, ALL_SCOPE or a LASTING_SCOPE). */
static void paths_of(const struct mock_overrides *o, unsigned int s, struct scope_paths *p)
{
    if (s == ALL_SCOPE)
        snprintf(p->yaml_name, sizeof p->yaml_name, "%s.yaml", MOKKA_OVERRIDES_ALL_SCOPE);
    else if (s > ALL_SCOPE)
        snprintf(p->yaml_name, sizeof p->yaml_name, "%s%u.yaml", MOKKA_OVERRIDES_LASTING_SCOPE_PREFIX,
                 s - LASTING_SCOPE(0));
    else
        snprintf(p->yaml_name, sizeof p->yaml_name, "%s%u.yaml", MOKKA_OVERRIDES_GPU_SCOPE_PREFIX, s);
    config_companion_path(p->yaml_name, p->nvml_name, sizeof p->nvml_name);
    if (snprintf(p->yaml, sizeof p->yaml, "%s/%s", o->dir, p->yaml_name) >= (int)sizeof p->yaml ||
        snprintf(p->nvml, sizeof p->nvml, "%s/%s", o->dir, p->nvml_name) >= (int)sizeof p->nvml)
        p->yaml[0] = p->nvml[0] = '\0';          /* only messages name these */
}

/* The directory, opened afresh (a workload may have replaced it): -1 when there is none,
 * or when it is not a directory (a link in its place included: reported once). */
static int open_dir(const struct mock_overrides *o)
{
    int fd = flat_open_dir(AT_FDCWD, o->dir);
    if (fd >= 0)
        return fd;
    if (errno == ENOENT)
        return -1;
    struct stat st;
    int link = lstat(o->dir, &st) == 0 && S_ISLNK(st.st_mode);
    mock_warn_once("ignoring overrides %s: %s (it holds %s.yaml and %s<N>.yaml)", o->dir,
                   link ? "a symbolic link, not followed" : "not a directory", MOKKA_OVERRIDES_ALL_SCOPE,
                   MOKKA_OVERRIDES_GPU_SCOPE_PREFIX);
    return -1;
}

static struct scope_files *files_of(struct mock_overrides *o, unsigned int s)
{
    return &o->files[s];
}

/* Load scope `s` into *out (left empty when absent or ignored).
 * SCOPE_PENDING: a write may be in flight; keep the layer in use for now. */
static enum scope_result load_scope(struct mock_overrides *o, int dirfd, unsigned int s, long long now,
                                    int first, struct flat *out)
{
    struct scope_paths p;
    paths_of(o, s, &p);
    struct scope_files *sf = files_of(o, s);
    struct file_id y = file_id_at(dirfd, p.yaml_name), c = file_id_at(dirfd, p.nvml_name);
    memset(out, 0, sizeof *out);
    if (y.present) {
        struct flat_why why;
        enum flat_status st = flat_load(dirfd, p.yaml_name, p.nvml_name, &KIND_OVERRIDES, out, &why);
        if (st != FLAT_OK && st != FLAT_YAML_MISSING && !why.yaml_blank) {
            /* Writers rename the companion first: a companion no older than its
             * YAML is a write in flight (even at nvmlInit), while a YAML newer
             * than its companion was edited by hand. Anything else wrong with a
             * file is no write in flight: reported at once. */
            int in_flight = st == FLAT_MISSING || st == FLAT_STALE;
            int named = file_id_same(&y, &sf->named_yaml) && file_id_same(&c, &sf->named_nvml);
            int wait = in_flight && !named && (!first || (c.present && c.mtime_ns >= y.mtime_ns));
            if (wait && (!file_id_same(&y, &sf->bad_yaml) || !file_id_same(&c, &sf->bad_nvml))) {
                sf->bad_yaml = y;                 /* a new pair: the writer may be between renames */
                sf->bad_nvml = c;
                sf->mismatch_since_ms = now;
                return SCOPE_PENDING;
            }
            if (wait && now - sf->mismatch_since_ms < GRACE_MS)
                return SCOPE_PENDING;
            why.file = why.file == p.yaml_name ? p.yaml : p.nvml;
            mock_say_unusable("overrides", p.yaml, &why, 1);
            sf->named_yaml = y;
            sf->named_nvml = c;
        }
    }
    sf->seen_yaml = y;
    sf->seen_nvml = c;
    return SCOPE_READY;
}

static int scope_changed(struct mock_overrides *o, int dirfd, unsigned int s)
{
    struct scope_paths p;
    paths_of(o, s, &p);
    const struct scope_files *sf = files_of(o, s);
    struct file_id y = file_id_at(dirfd, p.yaml_name), c = file_id_at(dirfd, p.nvml_name);
    return !file_id_same(&y, &sf->seen_yaml) || !file_id_same(&c, &sf->seen_nvml);
}

/* The next layer from the directory `dirfd` (-1: none), if a scope changed and no
 * write is in flight. Called with the lock held. `first`: at nvmlInit, report at once. */
static void reload_from(struct mock_overrides *o, int dirfd, long long now, int first)
{
    int changed = !o->seen_valid || scope_changed(o, dirfd, ALL_SCOPE);
    for (unsigned int s = 0; s < o->count && !changed; s++)
        changed = scope_changed(o, dirfd, s) || scope_changed(o, dirfd, LASTING_SCOPE(s));
    struct ovr_layer *l = changed ? calloc(1, sizeof *l) : NULL;
    if (!l)
        return;
    l->refs = 1;
    for (unsigned int s = 0; s <= 2 * o->count; s++) {
        unsigned int slot = s < o->count ? s : s == o->count ? ALL_SCOPE : LASTING_SCOPE(s - o->count - 1);
        if (load_scope(o, dirfd, slot, now, first, &l->scope[slot]) == SCOPE_PENDING) {
            layer_unref(l);
            return;
        }
    }
    o->seen_valid = 1;
    struct ovr_layer *old = o->cur;
    o->cur = l;                                   /* scopes without a file are empty: they find nothing */
    layer_unref(old);
}

static void reload(struct mock_overrides *o, long long now, int first)
{
    int dirfd = open_dir(o);
    reload_from(o, dirfd, now, first);
    if (dirfd >= 0)
        close(dirfd);
}

struct mock_overrides *overrides_open(const char *dir, unsigned int count)
{
    struct mock_overrides *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    pthread_mutex_init(&o->lock, NULL);
    o->count = count > MOCK_MAX_GPUS ? MOCK_MAX_GPUS : count;
    snprintf(o->dir, sizeof o->dir, "%s", dir);
    return o;
}

void overrides_start(struct mock_overrides *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    long long now = monotonic_ms();
    reload(o, now, 1);
    o->next_check_ms = now + CHECK_MS;
    pthread_mutex_unlock(&o->lock);
}

struct ovr_layer *overrides_acquire(struct mock_overrides *o)
{
    if (!o)
        return NULL;
    pthread_mutex_lock(&o->lock);
    long long now = monotonic_ms();
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
    if (!l)                                       /* none acquired (and none without a set) */
        return;
    pthread_mutex_lock(&o->lock);
    layer_unref(l);
    pthread_mutex_unlock(&o->lock);
}

const struct flat *overrides_gpu(const struct ovr_layer *l, unsigned int phys)
{
    return l && phys < MOCK_MAX_GPUS ? &l->scope[phys] : NULL;
}

const struct flat *overrides_lasting(const struct ovr_layer *l, unsigned int phys)
{
    return l && phys < MOCK_MAX_GPUS ? &l->scope[LASTING_SCOPE(phys)] : NULL;
}

const struct flat *overrides_all(const struct ovr_layer *l)
{
    return l ? &l->scope[ALL_SCOPE] : NULL;
}
