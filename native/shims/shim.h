/* The LD_PRELOAD path shims: one interposer set (interpose.c), one path map per
 * library (ibsys.c, mockfs.c, ibverbs.c).
 *
 * A shim rewrites an absolute path under one of its prefixes to the same path
 * under its root (MOCK_IB_ROOT, MOCK_PCI_ROOT): /sys/bus/pci/devices becomes
 * $MOCK_PCI_ROOT/sys/bus/pci/devices. Everything else passes through untouched.
 * The map runs in the caller's stack buffer (no allocation, no lock: safe in a
 * signal handler and from any thread); a rewritten path that would not fit
 * fails with ENAMETOOLONG and never falls back to the host path. The
 * configuration is read from the environment once, when the library loads
 * (before that, straight from the environment): with the variables unset the
 * shim passes every path through. */
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

/* path -> path itself (not ours), buf (rewritten), or NULL with errno set. */
const char *mokka_shim_map(const char *path, char buf[MOKKA_SHIM_PATH_MAX]);

/* Pure: the rewrite of `path` under `cfg`, as mokka_shim_map. Exposed for tests. */
const char *mokka_shim_rewrite(const struct mokka_shim_config *cfg, const char *path,
                               char *buf, size_t size);

/* The value of environment variable `name` with no allocation, or NULL. */
const char *mokka_shim_getenv(const char *name);

#endif
