/* The libc path calls every path shim interposes: each maps its path argument
 * (mokka_shim_map) and calls the next definition (dlsym RTLD_NEXT), so several
 * shims preloaded together chain. Covered: the open family with the fortify
 * (__open_2, __openat_2) and 64-bit variants, fopen/freopen, opendir and
 * scandir (glibc's scandir opens its directory internally, past opendir), the
 * stat family (stat/lstat/fstatat since glibc 2.33, __xstat/__lxstat/__fxstatat
 * before, statx), access/faccessat/euidaccess, readlink/readlinkat (and their
 * __*_chk), realpath (and __realpath_chk), and chdir (ibstatus cds into
 * /sys/class/infiniband and reads relative paths from there). The next definitions are resolved
 * in the constructor, so a call from a signal handler never reaches dlsym. */
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
    X(readlinkat) X(__readlink_chk) X(__readlinkat_chk) X(realpath) X(__realpath_chk) X(chdir)

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
#define NEXT(name) \
    __typeof__(&name) real = __atomic_load_n(&next_##name, __ATOMIC_RELAXED); \
    if (real == NULL) { \
        real = (__typeof__(&name))lookup(#name); \
        __atomic_store_n(&next_##name, real, __ATOMIC_RELAXED); \
    } \
    if (real == NULL) { errno = ENOSYS; return FAIL; }

/* `mapped`: the path to hand on, or return FAIL (errno set by the map). */
#define MAP(path) \
    char buf_[MOKKA_SHIM_PATH_MAX]; \
    const char *mapped = mokka_shim_map(path, buf_); \
    if (mapped == NULL) return FAIL;

static int has_mode(int flags)
{
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return 1;
#endif
    return (flags & O_CREAT) != 0;
}

#define FAIL (-1)

#define WRAP_OPEN(name) \
    MOKKA_EXPORT int name(const char *path, int flags, ...) \
    { \
        mode_t mode = 0; \
        if (has_mode(flags)) { \
            va_list ap; \
            va_start(ap, flags); \
            mode = (mode_t)va_arg(ap, int); \
            va_end(ap); \
        } \
        NEXT(name) MAP(path) \
        return real(mapped, flags, mode); \
    }
WRAP_OPEN(open)
WRAP_OPEN(open64)

#define WRAP_OPENAT(name) \
    MOKKA_EXPORT int name(int dirfd, const char *path, int flags, ...) \
    { \
        mode_t mode = 0; \
        if (has_mode(flags)) { \
            va_list ap; \
            va_start(ap, flags); \
            mode = (mode_t)va_arg(ap, int); \
            va_end(ap); \
        } \
        NEXT(name) MAP(path) \
        return real(dirfd, mapped, flags, mode); \
    }
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

#define WRAP_1(ret, name, T1) \
    MOKKA_EXPORT ret name(const char *path, T1 a) { NEXT(name) MAP(path) return real(mapped, a); }
#define WRAP_2(ret, name, T1, T2) \
    MOKKA_EXPORT ret name(const char *path, T1 a, T2 b) \
    { NEXT(name) MAP(path) return real(mapped, a, b); }
#define WRAP_AT1(ret, name, T1) \
    MOKKA_EXPORT ret name(int dirfd, const char *path, T1 a) \
    { NEXT(name) MAP(path) return real(dirfd, mapped, a); }
#define WRAP_AT2(ret, name, T1, T2) \
    MOKKA_EXPORT ret name(int dirfd, const char *path, T1 a, T2 b) \
    { NEXT(name) MAP(path) return real(dirfd, mapped, a, b); }
#define WRAP_AT3(ret, name, T1, T2, T3) \
    MOKKA_EXPORT ret name(int dirfd, const char *path, T1 a, T2 b, T3 c) \
    { NEXT(name) MAP(path) return real(dirfd, mapped, a, b, c); }
#define WRAP_VER(name, S) \
    MOKKA_EXPORT int name(int ver, const char *path, struct S *st) \
    { NEXT(name) MAP(path) return real(ver, mapped, st); }

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
WRAP_AT3(int, statx, int, unsigned int, struct statx *)
WRAP_1(int, access, int)
WRAP_1(int, euidaccess, int)
WRAP_1(int, eaccess, int)
WRAP_AT2(int, faccessat, int, int)
WRAP_2(ssize_t, readlink, char *, size_t)
WRAP_AT2(ssize_t, readlinkat, char *, size_t)

MOKKA_EXPORT int chdir(const char *path)
{
    NEXT(chdir) MAP(path)
    return real(mapped);
}

MOKKA_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flag)
{
    NEXT(__fxstatat) MAP(path)
    return real(ver, dirfd, mapped, st, flag);
}

MOKKA_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flag)
{
    NEXT(__fxstatat64) MAP(path)
    return real(ver, dirfd, mapped, st, flag);
}

MOKKA_EXPORT ssize_t __readlink_chk(const char *path, char *out, size_t len, size_t outlen)
{
    NEXT(__readlink_chk) MAP(path)
    return real(mapped, out, len, outlen);
}

MOKKA_EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *out, size_t len,
                                      size_t outlen)
{
    NEXT(__readlinkat_chk) MAP(path)
    return real(dirfd, mapped, out, len, outlen);
}

MOKKA_EXPORT int scandir(const char *path, struct dirent ***list,
                         int (*filter)(const struct dirent *),
                         int (*compare)(const struct dirent **, const struct dirent **))
{
    NEXT(scandir) MAP(path)
    return real(mapped, list, filter, compare);
}

MOKKA_EXPORT int scandir64(const char *path, struct dirent64 ***list,
                           int (*filter)(const struct dirent64 *),
                           int (*compare)(const struct dirent64 **, const struct dirent64 **))
{
    NEXT(scandir64) MAP(path)
    return real(mapped, list, filter, compare);
}

#undef FAIL
#define FAIL NULL

MOKKA_EXPORT FILE *fopen(const char *path, const char *mode)
{
    NEXT(fopen) MAP(path)
    return real(mapped, mode);
}

MOKKA_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    NEXT(fopen64) MAP(path)
    return real(mapped, mode);
}

MOKKA_EXPORT FILE *freopen(const char *path, const char *mode, FILE *stream)
{
    NEXT(freopen) MAP(path)
    return real(mapped, mode, stream);
}

MOKKA_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
    NEXT(freopen64) MAP(path)
    return real(mapped, mode, stream);
}

MOKKA_EXPORT DIR *opendir(const char *path)
{
    NEXT(opendir) MAP(path)
    return real(mapped);
}

MOKKA_EXPORT char *realpath(const char *path, char *resolved)
{
    NEXT(realpath) MAP(path)
    return real(mapped, resolved);
}

MOKKA_EXPORT char *__realpath_chk(const char *path, char *resolved, size_t size)
{
    NEXT(__realpath_chk) MAP(path)
    return real(mapped, resolved, size);
}
