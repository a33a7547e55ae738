/* The LD_PRELOAD path shims: one interposer set (interpose.c), one path map per
 * library (ibsys.c, mockfs.c, ibverbs.c).
 *
 * A shim redirects a path under one of its prefixes to the same path under its
 * root (MOCK_IB_ROOT, MOCK_PCI_ROOT): /sys/bus/pci/devices becomes
 * $MOCK_PCI_ROOT/sys/bus/pci/devices. It decides on the path's lexical normal
 * form (lexical.c), walking its components from where it starts: "/" for an
 * absolute path, else the working directory or the directory fd of an *at
 * call. "//" and "." drop out and ".." takes one component off as text, so
 * "/sys//bus/pci", "/sys/bus/../bus/pci" and "bus/pci" in /sys are all
 * redirected, and "/sys/bus/pci/../../../../etc/passwd" is the host's
 * /etc/passwd. A redirected path is the normal form under the root, so it
 * never climbs out of it.
 *
 * The mock view is the set of paths under a prefix, less those already inside
 * the root. A walk that enters it at any step is resolved in it: redirected if
 * it ends there, else handed on in normal form (the host's path it names). A
 * directory inside the root that stands for a view path (the working directory
 * after chdir("/sys/bus/pci"), a directory fd opened there) starts the walk at
 * that view path, so ".." from $MOCK_PCI_ROOT/sys/bus/pci climbs the view
 * (/sys/bus, the host's), never out of the root. A walk that never enters the
 * view (any other path inside the root included) goes on exactly as the caller
 * wrote it.
 *
 * Everything runs in the caller's stack buffer and a few system calls (no
 * allocation, no lock: safe in a signal handler, a constructor and from any
 * thread); a path that would not fit fails with ENAMETOOLONG and never falls
 * back to the host path. The configuration is read from the environment once,
 * when the library loads (before that, straight from the environment): with the
 * variables unset the shim hands every call on unchanged, a NULL path included. */
#ifndef MOKKA_SHIM_H
#define MOKKA_SHIM_H

#include <stddef.h>

#define MOKKA_EXPORT __attribute__((visibility("default")))
#define MOKKA_SHIM_PATH_MAX 4096        /* PATH_MAX, with its terminating NUL */

/* One prefix: a path matches when it starts with `text` and, when `whole` is
 * set, the next character ends the component ('/' or NUL). */
struct mokka_prefix {
    const char *text;
    int whole;
};

/* The library's own part: its root (NULL or "" when inactive) and prefixes. */
struct mokka_shim_config {
    const char *root;
    const struct mokka_prefix *prefixes;
};

/* Filled by the library's map file from the environment (the root points into
 * the environment block, which glibc never frees); called once from the
 * constructor and, before that ran, on every call. */
void mokka_shim_configure(struct mokka_shim_config *out);

/* The path to hand on for `path` of a call that resolves a relative path
 * against `dirfd` (AT_FDCWD: the working directory): *out is path itself or
 * buf. 0, or -1 with errno set (the call must fail; errno is kept otherwise). */
int mokka_shim_map(int dirfd, const char *path, char buf[MOKKA_SHIM_PATH_MAX], const char **out);

/* Pure: `raw` in lexical normal form (in buf, or raw itself when that does not
 * fit, which no path fits under either), or NULL for an inactive root. */
const char *mokka_shim_root(const char *raw, char *buf, size_t size);

/* Pure: whether the decision for `path` needs the directory it starts from. */
int mokka_shim_needs_base(const struct mokka_shim_config *cfg, const char *path);

/* Pure: the decision of mokka_shim_map under `cfg` (its root from
 * mokka_shim_root). `base` is the directory a relative path starts from
 * (absolute; it may be buf itself) or NULL when it cannot be known. */
int mokka_shim_rewrite(const struct mokka_shim_config *cfg, const char *base, const char *path,
                       char *buf, size_t size, const char **out);

/* Lexical normal form (lexical.c). A normal path is "/" or "/a/b". */

/* The next component of a path at or after `at` (slashes skipped), its length
 * in *n; NULL when none is left. */
const char *mokka_path_component(const char *at, size_t *n);

/* The normal path buf[0..len) with component c (n bytes) applied: "." leaves
 * it, ".." takes one off (never above "/"), any other is appended. The new
 * length (no terminating NUL written), or 0 if it would not fit in size. */
size_t mokka_path_apply(char *buf, size_t len, size_t size, const char *c, size_t n);

/* Every component of `path` applied to buf[0..len), NUL-terminated; `path`
 * may be buf itself (an absolute path put in normal form where it is, len 1).
 * The new length, or 0. */
size_t mokka_path_append(char *buf, size_t len, size_t size, const char *path);

/* Whether `path` must name a directory (it ends in "/", "." or ".."). */
int mokka_path_names_dir(const char *path);

/* Whether one of `path`'s components is "..". */
int mokka_path_climbs(const char *path);

/* The value of environment variable `name` with no allocation, or NULL. */
const char *mokka_shim_getenv(const char *name);

#endif
