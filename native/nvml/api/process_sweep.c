/* Removing the records no live process holds (processes.c states the rules).
 *
 * A record stays where its process died; its lock went with it, so readers no
 * longer count it, but its file is still there. The writer removes its own user's
 * dead records when it writes its first one; nvmlMokkaSweepProcessRecords is the
 * agent's (root on the host), and sweeps every user's directory. A temp file is
 * removed only when no one holds it and it is older than STALE_TEMP_SECONDS: a
 * writer locks its temp file just after creating it. What is not a user's
 * directory in `processes/` (nvmlMokkaProcessRecordsStray says) no reader opens;
 * the agent removes it as it removes any tree a workload may have made.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "engine/regular.h"
#include "mokka_private.h"
#include "process_records.h"

/* Directory entries read per sweep: a safety bound only (getdents is cheap). */
#define SWEEP_ENTRIES_MAX (1u << 20)

/* 1 when `name` was removed: a regular file no process holds, never through a link. */
static int sweep_one(int dir, const char *name, time_t now)
{
    unsigned int phys;
    int temp = record_temp_name(name);
    if (!temp && !record_name(name, &phys))
        return 0;
    struct stat st, was;
    if (records_own(name) || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        (temp && now - st.st_mtime <= STALE_TEMP_SECONDS))
        return 0;
    int fd = regular_open(dir, name, &was);       /* never opens a FIFO or a device */
    if (fd < 0)
        return 0;
    /* The file still at `name` after the check is the one checked: a writer renames
     * its next record over `name` before it lets go of this one, so a record seen
     * free was already replaced if it was going to be. */
    int gone = !record_held(fd, 1, LIVE_BYTE, NULL) &&
               fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == was.st_dev &&
               st.st_ino == was.st_ino && unlinkat(dir, name, 0) == 0;
    close(fd);
    return gone;
}

int records_sweep(int dir)
{
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int removed = 0;
    time_t now = time(NULL);
    struct dirent *e;
    for (unsigned int seen = 0; seen < SWEEP_ENTRIES_MAX && (e = readdir(d)) != NULL; seen++)
        removed += sweep_one(dir, e->d_name, now);
    closedir(d);
    return removed;
}

int nvmlMokkaProcessRecordsStray(int dir, const char *name)
{
    uid_t uid;
    struct stat st;
    if (!name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        errno = EINVAL;
        return -1;
    }
    if (!records_user_name(name, &uid))
        return 1;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    return !records_user_dir_ok(&st, uid);
}

int nvmlMokkaSweepProcessRecords(const char *dir)
{
    if (!dir) {
        errno = EINVAL;
        return -1;
    }
    int top = records_open_dir(dir, 0);
    int fd = top >= 0 ? dup(top) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        if (top >= 0)
            close(top);
        errno = saved;
        return -1;
    }
    int removed = 0;
    struct dirent *e;
    records_lock();
    for (unsigned int seen = 0; seen < SWEEP_ENTRIES_MAX && (e = readdir(d)) != NULL; seen++) {
        uid_t uid;
        struct stat st;
        if (!records_user_name(e->d_name, &uid))
            continue;
        int user = records_open_user_dir(top, uid, 0, &st);
        if (user < 0)
            continue;
        int n = records_sweep(user);
        removed += n > 0 ? n : 0;
        close(user);
    }
    records_unlock();
    closedir(d);
    close(top);
    return removed;
}
