/* The libc path calls every path shim interposes: each maps its path argument
 * (mokka_shim_map, with the directory fd of an *at call) and calls the next
 * definition (dlsym RTLD_NEXT), so several shims preloaded together chain.
 * Covered: the open family with the fortify (__open_2, __openat_2) and 64-bit
 * variants, fopen/freopen, opendir and scandir (glibc's scandir opens its
 * directory internally, past opendir), the stat family (stat/lstat/fstatat
 * since glibc 2.33, __xstat/__lxstat/__fxstatat before, statx),
 * access/faccessat/euidaccess, readlink/readlinkat (and their __*_chk),
 * realpath (and __realpath_chk), the path xattr calls (ls -l asks lgetxattr
 * and getxattr of every entry) and chdir (ibstatus cds into
 * /sys/class/infiniband and reads relative paths from there). The next
 * definitions are resolved in the constructor, so a call from a signal handler
 * never reaches dlsym. */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "shim.h"

/* Declared here, not through <sys/stat.h>: older glibc headers define some as
 * inline wrappers, and the shims only pass the buffers through. */
struct stat;
struct stat64;
struct statx;
int stat(const char *, struct stat *);
int stat64(const char *, struct stat64 *);
int lstat(const char *, struct stat *);
int lstat64(const char *, struct stat64 *);
int fstatat(int, const char *, struct stat *, int);
int fstatat64(int, const char *, struct stat64 *, int);
int __xstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat(int, const char *, struct stat *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);
int statx(int, const char *, int, unsigned int, struct statx *);
int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
ssize_t __readlink_chk(const char *, char *, size_t, size_t);
ssize_t __readlinkat_chk(int, const char *, char *, size_t, size_t);
char *__realpath_chk(const char *, char *, size_t);
int eaccess(const char *, int);

#define FUNCTIONS(X) \
    X(open) X(open64) X(__open_2) X(__open64_2) X(openat) X(openat64) X(__openat_2) \
    X(__openat64_2) X(creat) X(creat64) X(fopen) X(fopen64) X(freopen) X(freopen64) \
    X(opendir) X(scandir) X(scandir64) X(stat) X(stat64) X(lstat) X(lstat64) X(fstatat) \
    X(fstatat64) X(__xstat) X(__xstat64) X(__lxstat) X(__lxstat64) X(__fxstatat) \
    X(__fxstatat64) X(statx) X(access) X(faccessat) X(euidaccess) X(eaccess) X(readlink) \
    X(readlinkat) X(__readlink_chk) X(__readlinkat_chk) X(realpath) X(__realpath_chk) X(chdir) \
    X(getxattr) X(lgetxattr) X(listxattr) X(llistxattr) X(setxattr) X(lsetxattr) X(removexattr) \
    X(lremovexattr)

#define DECLARE(name) static __typeof__(&name) next_##name;
FUNCTIONS(DECLARE)

/* dlsym finds the oldest version of a symbol glibc defines at two (realpath:
 * GLIBC_2.2.5 and GLIBC_2.3 on x86_64), so those name their current one. */
static void *lookup(const char *name)
{
    void *sym = NULL;
#if defined(__x86_64__)
    if (strcmp(name, "realpath") == 0)
        sym = dlvsym(RTLD_NEXT, name, "GLIBC_2.3");
#endif
    return sym != NULL ? sym : dlsym(RTLD_NEXT, name);
}

#define RESOLVE(name) \
    __atomic_store_n(&next_##name, (__typeof__(&name))lookup(#name), __ATOMIC_RELAXED);

__attribute__((constructor)) static void resolve_all(void)
{
    FUNCTIONS(RESOLVE)
}

/* The next definition; resolved late only if called before the constructor. */
#define NEXT(name, fail) \
    __typeof__(&name) real = __atomic_load_n(&next_##name, __ATOMIC_RELAXED); \
    if (real == NULL) { \
        real = (__typeof__(&name))lookup(#name); \
        __atomic_store_n(&next_##name, real, __ATOMIC_RELAXED); \
    } \
    if (real == NULL) { errno = ENOSYS; return fail; }

/* `mapped`: the path to hand on, or return `fail` (errno set by the map). */
#define MAP(dirfd, path, fail) \
    char buf_[MOKKA_SHIM_PATH_MAX]; \
    const char *mapped; \
    if (mokka_shim_map(dirfd, path, buf_, &mapped) != 0) return fail;

/* A caller's NULL path goes on as it came, for libc to answer as without us
 * (EFAULT, EINVAL): the nonnull contract of libc's declarations is the
 * caller's, so the sanitizer build does not stop a wrapper for handing it on. */
#define PASS_NULL __attribute__((no_sanitize("nonnull-attribute")))

/* One wrapped call: its parameters as libc declares them (the path named
 * `path`), `dirfd` where a relative path starts from, and the arguments handed
 * on with `mapped` for the path. */
#define WRAP(ret, fail, name, dirfd, params, args) \
    MOKKA_EXPORT PASS_NULL ret name params \
    { NEXT(name, fail) MAP(dirfd, path, fail) return real args; }

/* The common shapes: a path and 1-4 more arguments; a directory fd, a path and
 * 1-3 more. */
#define WRAP_1(ret, name, T1) \
    WRAP(ret, -1, name, AT_FDCWD, (const char *path, T1 a), (mapped, a))
#define WRAP_2(ret, name, T1, T2) \
    WRAP(ret, -1, name, AT_FDCWD, (const char *path, T1 a, T2 b), (mapped, a, b))
#define WRAP_3(ret, name, T1, T2, T3) \
    WRAP(ret, -1, name, AT_FDCWD, (const char *path, T1 a, T2 b, T3 c), (mapped, a, b, c))
#define WRAP_4(ret, name, T1, T2, T3, T4) \
    WRAP(ret, -1, name, AT_FDCWD, (const char *path, T1 a, T2 b, T3 c, T4 d), (mapped, a, b, c, d))
#define WRAP_AT1(ret, name, T1) \
    WRAP(ret, -1, name, dirfd, (int dirfd, const char *path, T1 a), (dirfd, mapped, a))
#define WRAP_AT2(ret, name, T1, T2) \
    WRAP(ret, -1, name, dirfd, (int dirfd, const char *path, T1 a, T2 b), (dirfd, mapped, a, b))
#define WRAP_AT3(ret, name, T1, T2, T3) \
    WRAP(ret, -1, name, dirfd, (int dirfd, const char *path, T1 a, T2 b, T3 c), \
         (dirfd, mapped, a, b, c))
#define WRAP_VER(name, S) \
    WRAP(int, -1, name, AT_FDCWD, (int ver, const char *path, struct S *st), (ver, mapped, st))
#define WRAP_VERAT(name, S) \
    WRAP(int, -1, name, dirfd, (int ver, int dirfd, const char *path, struct S *st, int flag), \
         (ver, dirfd, mapped, st, flag))

static int has_mode(int flags)
{
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return 1;
#endif
    return (flags & O_CREAT) != 0;
}

/* The variadic open family: the mode is read only when the flags say it is there. */
#define WRAP_OPEN(name, dirfd, params, args) \
    MOKKA_EXPORT PASS_NULL int name params \
    { \
        mode_t mode = 0; \
        if (has_mode(flags)) { \
            va_list ap; \
            va_start(ap, flags); \
            mode = (mode_t)va_arg(ap, int); \
            va_end(ap); \
        } \
        NEXT(name, -1) MAP(dirfd, path, -1) \
        return real args; \
    }
WRAP_OPEN(open, AT_FDCWD, (const char *path, int flags, ...), (mapped, flags, mode))
WRAP_OPEN(open64, AT_FDCWD, (const char *path, int flags, ...), (mapped, flags, mode))
WRAP_OPEN(openat, dirfd, (int dirfd, const char *path, int flags, ...),
          (dirfd, mapped, flags, mode))
WRAP_OPEN(openat64, dirfd, (int dirfd, const char *path, int flags, ...),
          (dirfd, mapped, flags, mode))

typedef int (*dirent_filter)(const struct dirent *);
typedef int (*dirent_compare)(const struct dirent **, const struct dirent **);
typedef int (*dirent64_filter)(const struct dirent64 *);
typedef int (*dirent64_compare)(const struct dirent64 **, const struct dirent64 **);

WRAP_1(int, __open_2, int)
WRAP_1(int, __open64_2, int)
WRAP_AT1(int, __openat_2, int)
WRAP_AT1(int, __openat64_2, int)
WRAP_1(int, creat, mode_t)
WRAP_1(int, creat64, mode_t)
WRAP_1(int, stat, struct stat *)
WRAP_1(int, stat64, struct stat64 *)
WRAP_1(int, lstat, struct stat *)
WRAP_1(int, lstat64, struct stat64 *)
WRAP_AT2(int, fstatat, struct stat *, int)
WRAP_AT2(int, fstatat64, struct stat64 *, int)
WRAP_VER(__xstat, stat)
WRAP_VER(__xstat64, stat64)
WRAP_VER(__lxstat, stat)
WRAP_VER(__lxstat64, stat64)
WRAP_VERAT(__fxstatat, stat)
WRAP_VERAT(__fxstatat64, stat64)
WRAP_AT3(int, statx, int, unsigned int, struct statx *)
WRAP_1(int, access, int)
WRAP_1(int, euidaccess, int)
WRAP_1(int, eaccess, int)
WRAP_AT2(int, faccessat, int, int)
WRAP_2(ssize_t, readlink, char *, size_t)
WRAP_AT2(ssize_t, readlinkat, char *, size_t)
WRAP_3(ssize_t, __readlink_chk, char *, size_t, size_t)
WRAP_AT3(ssize_t, __readlinkat_chk, char *, size_t, size_t)
WRAP_3(int, scandir, struct dirent ***, dirent_filter, dirent_compare)
WRAP_3(int, scandir64, struct dirent64 ***, dirent64_filter, dirent64_compare)
WRAP_3(ssize_t, getxattr, const char *, void *, size_t)
WRAP_3(ssize_t, lgetxattr, const char *, void *, size_t)
WRAP_2(ssize_t, listxattr, char *, size_t)
WRAP_2(ssize_t, llistxattr, char *, size_t)
WRAP_4(int, setxattr, const char *, const void *, size_t, int)
WRAP_4(int, lsetxattr, const char *, const void *, size_t, int)
WRAP_1(int, removexattr, const char *)
WRAP_1(int, lremovexattr, const char *)
WRAP(int, -1, chdir, AT_FDCWD, (const char *path), (mapped))
WRAP(FILE *, NULL, fopen, AT_FDCWD, (const char *path, const char *mode), (mapped, mode))
WRAP(FILE *, NULL, fopen64, AT_FDCWD, (const char *path, const char *mode), (mapped, mode))
WRAP(FILE *, NULL, freopen, AT_FDCWD, (const char *path, const char *mode, FILE *stream),
     (mapped, mode, stream))
WRAP(FILE *, NULL, freopen64, AT_FDCWD, (const char *path, const char *mode, FILE *stream),
     (mapped, mode, stream))
WRAP(DIR *, NULL, opendir, AT_FDCWD, (const char *path), (mapped))
WRAP(char *, NULL, realpath, AT_FDCWD, (const char *path, char *resolved), (mapped, resolved))
WRAP(char *, NULL, __realpath_chk, AT_FDCWD, (const char *path, char *resolved, size_t size),
     (mapped, resolved, size))
