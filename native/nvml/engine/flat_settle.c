/* A pair caught between its writer's two renames, read again until it settles.
 *
 * A document and its companion are replaced by two renames, one file after the
 * other: Mokka's writers rename config.nvml before config.yaml (mokka/engine/pair.py),
 * a user's tar or cp may go the other way. A reader that loads between the two finds a
 * companion that is not its YAML's (FLAT_STALE) or one half missing, although the
 * pair before and the pair after are both whole. So flat_load_settled loads such a
 * pair again, each time either file changes, while the newer of the two changed
 * less than SETTLE_GRACE_MS ago, and for SETTLE_GRACE_MS at most: the reader gets
 * the old pair or the new one. A pair that stays stale (a YAML edited by hand and
 * never compiled) is reported with flat_load's reason once the grace is up, and one
 * whose files are older than the grace at once: no process waits on a pair that
 * has been stale for long.
 *
 * A file's age is its change time (ctime): a rename sets it, as does a write or a
 * touch, and no process can set it back. The modification time is kept by a rename,
 * and tar or cp -p put an old one on a file they place just now. Nothing read from
 * the files bounds the wait: the clock does, so a workload that keeps touching them
 * (every injected container can write the config directory) delays one load by the
 * grace and no more, and a FIFO or a link is refused by flat_load, never waited on.
 *
 * For readers that must answer now: nvmlInit's profile.
 * Readers that look again on their own keep what they had meanwhile and use
 * flat_load: the overrides layer (overrides.c, with a grace of its own that never
 * blocks a query) and the Xid events a wait polls (xid.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "file_id.h"
#include "flat.h"

#define SETTLE_GRACE_MS 1000     /* as the overrides' GRACE_MS: a writer's two renames fit in it */
#define SETTLE_POLL_MS 5

/* One file of the pair as a stat sees it: whether it is there, which inode, its change time. */
struct look {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    long long ctime_ns, mtime_ns;
};

static struct look look_at(int dirfd, const char *path)
{
    struct look l;
    struct stat st;
    memset(&l, 0, sizeof l);
    if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        l.present = 1;
        l.dev = st.st_dev;
        l.ino = st.st_ino;
        l.size = st.st_size;
        l.ctime_ns = (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
        l.mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
    return l;
}

static int same_look(const struct look *a, const struct look *b)
{
    return a->present == b->present && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->ctime_ns == b->ctime_ns && a->mtime_ns == b->mtime_ns;
}

/* Whether the newer file of the pair changed less than the grace ago. A change time
 * ahead of the clock counts as recent within the grace (the clock was set back, or a
 * file server's runs ahead); further ahead, as old. */
static int recent(const struct look *yaml, const struct look *companion)
{
    long long newest = 0;
    if (yaml->present)
        newest = yaml->ctime_ns;
    if (companion->present && companion->ctime_ns > newest)
        newest = companion->ctime_ns;
    if (!yaml->present && !companion->present)
        return 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long age_ms = ((long long)now.tv_sec * 1000000000LL + now.tv_nsec - newest) / 1000000;
    return age_ms < SETTLE_GRACE_MS && age_ms > -SETTLE_GRACE_MS;
}

/* What a writer between its two renames leaves: the two files disagree, or one is not there yet. */
static int in_flight(enum flat_status st)
{
    return st == FLAT_STALE || st == FLAT_MISSING || st == FLAT_YAML_MISSING;
}

enum flat_status flat_load_settled(int dirfd, const char *yaml, const char *companion, const struct flat_kind *kind,
                                   struct flat *out, struct flat_why *why)
{
    /* Looked at before each load, so that a rename during one shows as a change after it. */
    struct look y = look_at(dirfd, yaml), c = look_at(dirfd, companion);
    enum flat_status st = flat_load(dirfd, yaml, companion, kind, out, why);
    long long give_up = monotonic_ms() + SETTLE_GRACE_MS;
    while (in_flight(st) && monotonic_ms() < give_up) {
        struct look y_now = look_at(dirfd, yaml), c_now = look_at(dirfd, companion);
        if (!same_look(&y, &y_now) || !same_look(&c, &c_now)) {
            y = y_now;                            /* renamed since: read it again */
            c = c_now;
            st = flat_load(dirfd, yaml, companion, kind, out, why);
            continue;
        }
        if (!recent(&y_now, &c_now))
            break;                                /* stale for long: no write is in flight */
        struct timespec nap = {0, SETTLE_POLL_MS * 1000000L};
        nanosleep(&nap, NULL);                    /* a signal only shortens a nap */
    }
    return st;
}
