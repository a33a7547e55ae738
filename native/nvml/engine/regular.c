/* Opening a file a workload may have put anything in place of: only a regular file is
 * ever opened.
 *
 * driver/config is bound writable into containers, whose default capabilities allow
 * mknod there. The entry is looked at through an O_PATH descriptor, which opens
 * nothing, and only a regular file is then opened, through that descriptor's
 * /proc/self/fd link, so the file opened is the one looked at. A device node at a name
 * the library reads is never opened by a process of the host, root included (opening
 * some devices acts: a watchdog arms), and a FIFO never blocks a reader. Where /proc is
 * not mounted the name itself is opened (O_NONBLOCK, O_NOFOLLOW) and kept only if it is
 * the file that was looked at.
 */
#define _GNU_SOURCE
#include "regular.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY)

static int reopen_by_name(int dirfd, const char *name, const struct stat *looked)
{
    int fd = openat(dirfd, name, READ_FLAGS | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != looked->st_dev || st.st_ino != looked->st_ino)) {
        close(fd);
        errno = ENOENT;                           /* replaced between the two looks */
        return -1;
    }
    return fd;
}

int regular_open(int dirfd, const char *name, struct stat *st)
{
    int look = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (look < 0)
        return -1;
    if (fstat(look, st) != 0) {
        int saved = errno;
        close(look);
        errno = saved;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(look);
        errno = EFTYPE_NOT_REGULAR;
        return -1;
    }
    char link[32];
    snprintf(link, sizeof link, "/proc/self/fd/%d", look);
    int fd = open(link, READ_FLAGS);
    int saved = errno;
    if (fd < 0 && saved == ENOENT)
        fd = reopen_by_name(dirfd, name, st), saved = errno;
    close(look);
    errno = saved;
    return fd;
}
