#define _GNU_SOURCE
#include "file_id.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct file_id file_id_at(int dirfd, const char *name)
{
    struct file_id id;
    struct stat st;
    memset(&id, 0, sizeof id);
    if ((dirfd >= 0 || dirfd == AT_FDCWD) && name[0] && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        id.present = 1;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.size = st.st_size;
        id.mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
    return id;
}

int file_id_same(const struct file_id *a, const struct file_id *b)
{
    return a->present == b->present && (!a->present || (a->dev == b->dev && a->ino == b->ino &&
                                                        a->size == b->size && a->mtime_ns == b->mtime_ns));
}

long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
