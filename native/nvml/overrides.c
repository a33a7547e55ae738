/* The runtime overrides layer: overrides.nvml beside overrides.yaml.
 *
 * Re-checked (stat of both files) at most every CHECK_MS so a change written
 * while a process runs is seen within a second. A new layer is swapped in
 * under the lock; readers hold a reference, so the old one is freed only when
 * the last reader lets go. A companion that does not match its YAML is given
 * GRACE_MS to catch up (the writer renames the two files one after the
 * other): only a mismatching pair that stays unchanged that long is reported,
 * once, and the overrides ignored.
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

struct ovr_layer {
    unsigned int refs;
    struct flat f;
};

struct file_id {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    long long mtime_ns;
};

struct mock_overrides {
    pthread_mutex_t lock;
    char yaml[MOCK_PATH_MAX];
    char nvml[MOCK_PATH_MAX];
    struct ovr_layer *cur;
    long long next_check_ms;
    struct file_id seen_yaml, seen_nvml;
    int seen_valid;
    struct file_id bad_yaml, bad_nvml;     /* the mismatching pair being waited on */
    long long mismatch_since_ms;
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
        flat_free(&l->f);
        free(l);
    }
}

/* Swap in `l` (NULL: no overrides). Called with the lock held. */
static void install(struct mock_overrides *o, struct ovr_layer *l)
{
    struct ovr_layer *old = o->cur;
    o->cur = l;
    layer_unref(old);
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

/* Called with the lock held. `first`: at nvmlInit, report at once. */
static void reload(struct mock_overrides *o, long long now, int first)
{
    struct file_id y = file_id_of(o->yaml), c = file_id_of(o->nvml);
    if (o->seen_valid && same_id(&y, &o->seen_yaml) && same_id(&c, &o->seen_nvml))
        return;
    struct ovr_layer *l = NULL;
    if (y.present) {
        l = calloc(1, sizeof *l);
        if (!l)
            return;
        l->refs = 1;
        enum flat_status st = flat_load(o->yaml, o->nvml, "overrides", &l->f);
        if (st != FLAT_OK) {
            free(l);
            l = NULL;
            if (st != FLAT_YAML_MISSING && !blank_file(o->yaml)) {
                /* Writers rename the companion first: a companion no older than its
                 * YAML is a write in flight (even at nvmlInit), while a YAML newer
                 * than its companion was edited by hand. */
                int wait = !first || (c.present && c.mtime_ns >= y.mtime_ns);
                if (wait && (o->mismatch_since_ms == 0 || !same_id(&y, &o->bad_yaml) ||
                             !same_id(&c, &o->bad_nvml))) {
                    o->bad_yaml = y;              /* a new pair: the writer may be between renames */
                    o->bad_nvml = c;
                    o->mismatch_since_ms = now;
                    return;
                }
                if (wait && now - o->mismatch_since_ms < GRACE_MS)
                    return;
                mock_say_no_companion("overrides", o->yaml, o->nvml);
            }
        }
    }
    o->mismatch_since_ms = 0;
    o->seen_yaml = y;
    o->seen_nvml = c;
    o->seen_valid = 1;
    install(o, l);
}

struct mock_overrides *overrides_open(const char *yaml)
{
    struct mock_overrides *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    pthread_mutex_init(&o->lock, NULL);
    snprintf(o->yaml, sizeof o->yaml, "%s", yaml);
    config_companion_path(yaml, o->nvml, sizeof o->nvml);
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

const struct flat *overrides_flat(const struct ovr_layer *l)
{
    return l ? &l->f : NULL;
}
