/* The node's MIG partitions: one truth for every process on the node and in every
 * injected container, kept in mig.nvml beside config.yaml (mig_file.c is its form).
 *
 * Reading: each process keeps the partitions it last read and looks at the file
 * again (one stat) at most every CHECK_MS, as it does the overrides. A file that
 * is absent, or that is not one this node's boards can be in (a workload may
 * write it), gives the partitions the profile boots with (its modes and its
 * layout); a bad file is named once, on one line.
 *
 * Writing: a change is a read-modify-write of the whole file under the config
 * directory's flock, the lock Mokka's other writers of that directory take.
 * flock, not a lock file or compare-and-rename: the kernel drops it when its
 * holder dies, so a crash never leaves the node locked, and threads take it on
 * their own open file. The wait is bounded (names.MIG_LOCK_WAIT_MS): a workload
 * holding the lock makes changes fail with In Use, one line naming the
 * directory, and never hangs a caller. It gains nothing by it: it could as well
 * rewrite the file. Readers never lock: the file is replaced by rename, whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/file_id.h"
#include "mig.h"
#include "mig_file.h"

#define CHECK_MS 250

struct mig_node {
    struct mig_tables *tables;
    struct mig_view *view;
    char dir[MOCK_PATH_MAX];                      /* the directory of config.yaml */
    char path[MOCK_PATH_MAX + 16];                /* mig.nvml in it, for messages */
    pthread_mutex_t lock;                         /* the cache below */
    int loaded;
    struct file_id seen;
    long long next_check_ms;
    struct mig_gpu *gpus;                         /* [node count] */
};

struct mig_view *mig_node_view(const struct mock_node *n)
{
    return n->mig ? n->mig->view : NULL;
}

struct mig_node *mig_node_open(const struct mock_node *n)
{
    struct mig_node *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->gpus = calloc(n->count ? n->count : 1, sizeof *m->gpus);
    m->tables = mig_tables_open();
    m->view = mig_view_open(n);
    if (!m->gpus || !m->tables || !m->view) {
        mig_node_free(m);
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    snprintf(m->dir, sizeof m->dir, "%s", n->config_yaml);    /* absolute (config_locate) */
    char *slash = strrchr(m->dir, '/');
    if (slash)
        *(slash == m->dir ? slash + 1 : slash) = '\0';
    snprintf(m->path, sizeof m->path, "%s/%s", m->dir, MOKKA_MIG_STATE_FILE);
    return m;
}

void mig_node_free(struct mig_node *m)
{
    if (!m)
        return;
    mig_tables_free(m->tables);
    mig_view_free(m->view);
    free(m->gpus);
    free(m);
}

int mig_node_same(const struct mig_node *a, const struct mig_node *b)
{
    if (!a || !b)
        return a == b;
    return mig_view_same(a->view, b->view);
}

const struct mig_table *mig_table(const struct mock_node *n, unsigned int phys)
{
    return n->mig ? mig_tables_get(n->mig->tables, n, phys) : NULL;
}

/* --- the file's content as partitions, and back ------------------------------------ */

/* The GPU's UUID as the file records it ("" when it is not one the file can hold). */
static void gpu_uuid(const struct mock_gpu *g, char out[MIG_FILE_UUID_MAX])
{
    char v[MOCK_VALUE_MAX];
    out[0] = '\0';
    if (gpu_str(g, K_UUID, v, sizeof v) == 1 && strlen(v) < MIG_FILE_UUID_MAX &&
        strspn(v, "0123456789abcdefABCDEF-GPU") == strlen(v))
        snprintf(out, MIG_FILE_UUID_MAX, "%s", v);
}

static const char *gpu_from_file(const struct mig_table *t, const struct mig_file_gpu *fg, struct mig_gpu *out)
{
    memset(out, 0, sizeof *out);
    out->current = (unsigned char)fg->current;
    out->pending = (unsigned char)fg->pending;
    for (unsigned int id = 0; id < MIG_GI_IDS; id++) {
        const struct mig_file_gi *e = &fg->gi[id];
        if (!e->present)
            continue;
        int p = mig_gi_profile_by_id(t, e->profile_id);
        if (p < 0)
            return "a GPU instance profile the board does not have";
        if (out->ngi >= MIG_MAX_GIS || mig_gi_id_of(e->start, e->size) != (int)id)
            return "a GPU instance id that is not its placement's";
        struct mig_gi *gi = &out->gi[out->ngi++];
        gi->id = (unsigned char)id;
        gi->profile = (unsigned char)p;
        gi->start = (unsigned char)e->start;
        gi->size = (unsigned char)e->size;
        for (unsigned int c = 0; c < MIG_CI_IDS; c++) {
            if (!e->ci[c].present)
                continue;
            int cp = mig_ci_profile_by_id(&t->gi[p], e->ci[c].profile_id);
            if (cp < 0)
                return "a compute instance profile the GPU instance does not have";
            struct mig_ci *ci = &gi->ci[gi->nci++];
            ci->id = (unsigned char)c;
            ci->profile = (unsigned char)cp;
            ci->start = (unsigned char)e->ci[c].start;
            ci->size = (unsigned char)e->ci[c].size;
        }
    }
    return mig_gpu_invalid(t, out);
}

/* Fill gpus[] from the file's text; NULL, or why the file is ignored: what it does, or
 * with *holds set what it holds that it may not (as mig_file_parse). */
static const char *from_text(const struct mock_node *n, char *text, size_t len, struct mig_gpu *gpus, int *holds)
{
    struct mig_file *f = malloc(sizeof *f);
    *holds = 0;
    if (!f)
        return "cannot be read (no memory)";
    const char *why = mig_file_parse(text, len, n->count, f, holds);
    if (!why)
        *holds = 1;                               /* from here on: the partitions it holds */
    for (unsigned int p = 0; p < n->count && !why; p++) {
        const struct mig_file_gpu *fg = &f->gpu[p];
        const struct mig_table *t = mig_table(n, p);
        char uuid[MIG_FILE_UUID_MAX];
        int has_gi = 0;
        for (unsigned int id = 0; id < MIG_GI_IDS; id++)
            has_gi |= fg->gi[id].present;
        if (!fg->has_mode) {
            why = has_gi ? "GPU instances of a GPU without a MIG mode" : NULL;
            continue;
        }
        if (!t) {
            why = "a MIG mode for a GPU that is not MIG-capable";
            continue;
        }
        gpu_uuid(&n->gpus[p], uuid);
        if (fg->uuid[0] && strcasecmp(fg->uuid, uuid) != 0) {
            why = "was written for other GPUs (their UUIDs differ)";
            *holds = 0;
        } else {
            why = gpu_from_file(t, fg, &gpus[p]);
        }
    }
    free(f);
    return why;
}

static const char *to_file_and_write(const struct mock_node *n, int dirfd, const struct mig_gpu *gpus)
{
    struct mig_file *f = calloc(1, sizeof *f);
    if (!f)
        return "cannot be written (no memory)";
    for (unsigned int p = 0; p < n->count; p++) {
        const struct mig_table *t = mig_table(n, p);
        if (!t)
            continue;
        struct mig_file_gpu *fg = &f->gpu[p];
        const struct mig_gpu *g = &gpus[p];
        fg->has_mode = 1;
        fg->current = g->current;
        fg->pending = g->pending;
        gpu_uuid(&n->gpus[p], fg->uuid);
        for (unsigned int i = 0; i < g->ngi; i++) {
            const struct mig_gi *gi = &g->gi[i];
            struct mig_file_gi *e = &f->gpu[p].gi[gi->id];
            e->present = 1;
            e->profile_id = t->gi[gi->profile].id;
            e->start = gi->start;
            e->size = gi->size;
            for (unsigned int c = 0; c < gi->nci; c++) {
                const struct mig_ci *ci = &gi->ci[c];
                e->ci[ci->id] = (struct mig_file_ci){1, t->gi[gi->profile].ci[ci->profile].id, ci->start, ci->size};
            }
        }
    }
    const char *why = mig_file_write(dirfd, f, n->count);
    free(f);
    return why;
}

/* The partitions of every GPU as they are on disk now (boot ones where the file says nothing). */
static void load(const struct mock_node *n, int dirfd, struct mig_gpu *gpus)
{
    struct mig_node *m = n->mig;
    for (unsigned int p = 0; p < n->count; p++) {
        const struct mig_table *t = mig_table(n, p);
        if (t)
            mig_gpu_boot(t, &gpus[p]);
        else
            memset(&gpus[p], 0, sizeof gpus[p]);
    }
    int own = dirfd < 0;
    if (own)
        dirfd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *text = NULL;
    size_t len = 0;
    int holds = 0;
    const char *why = dirfd < 0 ? MIG_FILE_ABSENT : mig_file_read(dirfd, &text, &len);
    if (own && dirfd >= 0)
        close(dirfd);
    if (why == NULL) {
        struct mig_gpu *read = malloc(n->count * sizeof *read);
        if (read) {
            memcpy(read, gpus, n->count * sizeof *read);
            why = from_text(n, text, len, read, &holds);
            if (!why)
                memcpy(gpus, read, n->count * sizeof *read);
            free(read);
        }
    }
    free(text);
    if (why && why != MIG_FILE_ABSENT)
        mock_warn_once("ignoring %s: it %s%s: the partitions the profile boots with apply until a MIG change "
                       "rewrites it", m->path, holds ? "holds " : "", why);
}

/* With m->lock held. */
static void refresh(const struct mock_node *n, long long now)
{
    struct mig_node *m = n->mig;
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

int mig_gpu_get(const struct mock_node *n, unsigned int phys, struct mig_gpu *out)
{
    if (!n->mig || phys >= n->count || !mig_table(n, phys))
        return 0;
    struct mig_node *m = n->mig;
    pthread_mutex_lock(&m->lock);
    refresh(n, monotonic_ms());
    *out = m->gpus[phys];
    pthread_mutex_unlock(&m->lock);
    return 1;
}

/* --- changes -------------------------------------------------------------------------- */

nvmlReturn_t mig_gpu_change(const struct mock_node *n, unsigned int phys, mig_edit edit, void *arg)
{
    const struct mig_table *t = mig_table(n, phys);
    if (!t || !n->mig)
        return NVML_ERROR_NOT_SUPPORTED;
    struct mig_node *m = n->mig;
    int dirfd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        mock_say("cannot change MIG partitions: %s cannot be opened: %s", m->dir, strerror(errno));
        return NVML_ERROR_NO_PERMISSION;
    }
    if (!docfile_lock(dirfd, MOKKA_MIG_LOCK_WAIT_MS)) {
        mock_say("cannot change MIG partitions: %s is locked by another process for over %d ms "
                 "(its holder is in /proc/locks)", m->dir, MOKKA_MIG_LOCK_WAIT_MS);
        close(dirfd);
        return NVML_ERROR_IN_USE;
    }
    struct mig_gpu *gpus = malloc(n->count * sizeof *gpus);
    nvmlReturn_t ret = NVML_ERROR_MEMORY;
    int changed = 0;
    if (gpus) {
        load(n, dirfd, gpus);
        struct mig_gpu before = gpus[phys];
        ret = edit(t, &gpus[phys], arg);
        if (ret != NVML_SUCCESS)
            gpus[phys] = before;
        changed = memcmp(&before, &gpus[phys], sizeof before) != 0;
    }
    if (ret == NVML_SUCCESS && changed) {
        const char *why = to_file_and_write(n, dirfd, gpus);
        if (why) {
            mock_say("cannot change MIG partitions: %s %s", m->path, why);
            ret = why == MIG_FILE_NO_PERMISSION ? NVML_ERROR_NO_PERMISSION : NVML_ERROR_UNKNOWN;
        }
    }
    if (gpus) {                                   /* what is on disk now */
        pthread_mutex_lock(&m->lock);
        if (ret != NVML_SUCCESS && changed)
            load(n, dirfd, gpus);                 /* the write failed: the file as it is */
        memcpy(m->gpus, gpus, n->count * sizeof *gpus);
        m->seen = file_id_at(AT_FDCWD, m->path);
        m->loaded = 1;
        m->next_check_ms = monotonic_ms() + CHECK_MS;
        pthread_mutex_unlock(&m->lock);
    }
    free(gpus);
    close(dirfd);                                 /* and with it the lock */
    return ret;
}
