/* mokka_shim_map: the library's configuration, read once at load, and the
 * directory a relative path starts from, read from the kernel; the decision is
 * rewrite.c's. System calls are made directly: the libc functions of the same
 * names may be this shim's own wrappers, and none of these may allocate. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

static struct mokka_shim_config config;
static char config_root[MOKKA_SHIM_PATH_MAX];
static int configured;                  /* atomic: set once config is complete */

static void configure(struct mokka_shim_config *c, char *root)
{
    mokka_shim_configure(c);
    c->root = mokka_shim_root(c->root, root, MOKKA_SHIM_PATH_MAX);
}

__attribute__((constructor)) static void load(void)
{
    struct mokka_shim_config c;
    configure(&c, config_root);
    config = c;
    __atomic_store_n(&configured, 1, __ATOMIC_RELEASE);
}

/* Where a relative path starts. */
enum base {
    BASE_READ,                          /* in the buffer */
    BASE_UNKNOWN,                       /* a directory whose path cannot be read */
    BASE_REFUSED,                       /* refused by the kernel as it is: EBADF, ENOTDIR */
    BASE_TOO_LONG,
};

/* readlink of /proc/self/fd/<fd>: the path the directory fd was opened at. */
static long fd_path(int fd, char *buf, size_t size)
{
    char link[32] = "/proc/self/fd/", digits[12];
    size_t at = strlen(link), n = 0;
    unsigned v = (unsigned)fd;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0)
        link[at++] = digits[--n];
    link[at] = '\0';
    return syscall(SYS_readlinkat, AT_FDCWD, link, buf, size - 1);
}

/* Whether the kernel refuses `dirfd` as the start of a relative path (EBADF, ENOTDIR). */
static int refused(int dirfd)
{
    return syscall(SYS_faccessat, dirfd, ".", F_OK) != 0 && (errno == EBADF || errno == ENOTDIR);
}

static enum base read_base(int dirfd, char *buf, size_t size)
{
    long n;
    if (dirfd == AT_FDCWD) {
        n = syscall(SYS_getcwd, buf, size);   /* the length with its NUL */
        if (n < 0)
            return errno == ERANGE || errno == ENAMETOOLONG ? BASE_TOO_LONG : BASE_UNKNOWN;
        return buf[0] == '/' ? BASE_READ : BASE_UNKNOWN;     /* "(unreachable)/..." */
    }
    n = fd_path(dirfd, buf, size);
    if (n < 0)
        return refused(dirfd) ? BASE_REFUSED : BASE_UNKNOWN;
    if ((size_t)n >= size - 1)
        return BASE_TOO_LONG;           /* readlink truncates without saying so */
    buf[n] = '\0';
    return buf[0] == '/' ? BASE_READ : BASE_REFUSED;     /* "pipe:[...]", "socket:[...]" */
}

static int decide(const struct mokka_shim_config *cfg, int dirfd, const char *path,
                  char buf[MOKKA_SHIM_PATH_MAX], const char **out)
{
    int saved = errno;
    const char *base = NULL;
    *out = path;
    if (mokka_shim_needs_base(cfg, path)) {
        switch (read_base(dirfd, buf, MOKKA_SHIM_PATH_MAX)) {
        case BASE_READ:
            base = buf;
            break;
        case BASE_UNKNOWN:
            break;
        case BASE_REFUSED:
            errno = saved;
            return 0;
        case BASE_TOO_LONG:
            errno = ENAMETOOLONG;
            return -1;
        }
    }
    int rc = mokka_shim_rewrite(cfg, base, path, buf, MOKKA_SHIM_PATH_MAX, out);
    if (base != NULL && dirfd != AT_FDCWD && (rc != 0 || *out != path) && refused(dirfd)) {
        *out = path;                    /* a file's fd: ENOTDIR from the kernel, as without us */
        rc = 0;
    }
    if (rc == 0)
        errno = saved;
    return rc;
}

/* Called before our constructor ran: the configuration from the environment,
 * its root on this frame (kept off the frame of every later call). */
__attribute__((noinline)) static int decide_unconfigured(int dirfd, const char *path,
                                                          char buf[MOKKA_SHIM_PATH_MAX],
                                                          const char **out)
{
    struct mokka_shim_config c;
    char root[MOKKA_SHIM_PATH_MAX];
    configure(&c, root);
    return decide(&c, dirfd, path, buf, out);
}

int mokka_shim_map(int dirfd, const char *path, char buf[MOKKA_SHIM_PATH_MAX], const char **out)
{
    if (__atomic_load_n(&configured, __ATOMIC_ACQUIRE))
        return decide(&config, dirfd, path, buf, out);
    return decide_unconfigured(dirfd, path, buf, out);
}
