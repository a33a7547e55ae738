/* The proc hook's shared helpers (hook.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "hook.h"
#include "mokka_names.h"

#define NAME_MAX_LEN 255

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", MOKKA_PROC_HOOK_FILE);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

char *read_all(int fd, size_t max, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                free(buf);
                errno = EFBIG;
                return NULL;
            }
            cap = cap * 2 > max ? max : cap * 2;
            char *bigger = realloc(buf, cap + 1);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            free(buf);
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

void fd_path(char out[FD_PATH], int fd)
{
    snprintf(out, FD_PATH, "/proc/self/fd/%d", fd);
}

int bind_fd(int source, int target, unsigned long extra)
{
    char from[FD_PATH], to[FD_PATH];
    fd_path(from, source);
    fd_path(to, target);
    return mount(from, to, NULL, MS_BIND | extra, NULL);
}

int read_only(int dir, const char *name)
{
    int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char path[FD_PATH];
    fd_path(path, fd);
    int ret = mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | RO_FLAGS, NULL);
    close(fd);
    return ret;
}

int open_beneath(int dir, const char *rel, int flags)
{
    int at = dir;
    const char *name = rel;
    for (;;) {
        const char *slash = strchr(name, '/');
        size_t len = slash ? (size_t)(slash - name) : strlen(name);
        char part[NAME_MAX_LEN + 1];
        if (len == 0 || len > NAME_MAX_LEN) {
            if (at != dir)
                close(at);
            errno = len ? ENAMETOOLONG : EINVAL;
            return -1;
        }
        memcpy(part, name, len);
        part[len] = '\0';
        int next = slash ? openat(at, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                         : openat(at, part, flags | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        if (at != dir)
            close(at);
        if (next < 0 || !slash) {
            errno = saved;
            return next;
        }
        at = next;
        name = slash + 1;
    }
}
