/* The redirect decision shared by the path shims (see shim.h): pure, on the
 * caller's buffer. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "shim.h"

static int matches(const struct mokka_prefix *p, const char *path)
{
    size_t n = strlen(p->text);
    if (strncmp(path, p->text, n) != 0)
        return 0;
    return !p->whole || path[n] == '\0' || path[n] == '/';
}

static int under_prefix(const struct mokka_shim_config *cfg, const char *path)
{
    for (const struct mokka_prefix *p = cfg->prefixes; p->text != NULL; p++)
        if (matches(p, path))
            return 1;
    return 0;
}

/* The root's length when the normal path `path` lies inside it, else 0. */
static size_t inside_root(const struct mokka_shim_config *cfg, const char *path)
{
    size_t n = strlen(cfg->root);
    return strncmp(path, cfg->root, n) == 0 && (path[n] == '\0' || path[n] == '/') ? n : 0;
}

static int fail(int error)
{
    errno = error;
    return -1;
}

const char *mokka_shim_root(const char *raw, char *buf, size_t size)
{
    if (raw == NULL || raw[0] != '/')
        return NULL;
    buf[0] = '/';
    size_t len = mokka_path_append(buf, 1, size, raw);
    if (len == 0)
        return raw;                     /* longer than any path: every redirect fails */
    return len > 1 ? buf : NULL;        /* "/" would redirect nothing anywhere */
}

/* A path of the mock view: under a prefix, and not already inside the root. */
static int in_view(const struct mokka_shim_config *cfg, const char *path)
{
    return inside_root(cfg, path) == 0 && under_prefix(cfg, path);
}

/* buf: the normal form of the directory `base`, as the mock view's path (the
 * root taken off) when it lies inside the root under a prefix. Its
 * length, or 0 if it does not fit. */
static size_t start_from(const struct mokka_shim_config *cfg, const char *base, char *buf,
                         size_t size)
{
    buf[0] = '/';
    size_t len = mokka_path_append(buf, 1, size, base);
    size_t root = len != 0 ? inside_root(cfg, buf) : 0;
    if (root != 0 && under_prefix(cfg, buf + root)) {
        len -= root;
        memmove(buf, buf + root, len + 1);
    }
    return len;
}

/* An inactive shim, a NULL or an empty path: the call goes on untouched, for
 * the kernel or libc to answer as without the shim. */
static int considered(const struct mokka_shim_config *cfg, const char *path)
{
    return cfg->root != NULL && path != NULL && path[0] != '\0';
}

int mokka_shim_needs_base(const struct mokka_shim_config *cfg, const char *path)
{
    return considered(cfg, path) && path[0] != '/';
}

/* The walk: `path`'s components from where it starts. One that enters the
 * mock view at any step is resolved there: redirected if it ends under a
 * prefix, else handed on as its normal form (the host's path it names, which
 * the host's own walk through the mock's directories would not find). One that
 * never enters it goes on exactly as the caller wrote it. */
int mokka_shim_rewrite(const struct mokka_shim_config *cfg, const char *base, const char *path,
                       char *buf, size_t size, const char **out)
{
    *out = path;
    if (!considered(cfg, path))
        return 0;
    size_t len = 1;
    if (path[0] == '/') {
        memcpy(buf, "/", 2);
    } else if (base == NULL || base[0] != '/') {
        /* Where it starts is unknown: without ".." it cannot leave that directory. */
        return mokka_path_climbs(path) ? fail(ENOENT) : 0;
    } else if ((len = start_from(cfg, base, buf, size)) == 0) {
        return fail(ENAMETOOLONG);
    }
    int entered = in_view(cfg, buf);
    size_t n;
    for (const char *c = mokka_path_component(path, &n); c != NULL;
         c = mokka_path_component(c + n, &n)) {
        if ((len = mokka_path_apply(buf, len, size, c, n)) == 0)
            return fail(ENAMETOOLONG);
        buf[len] = '\0';
        entered = entered || in_view(cfg, buf);
    }
    if (!entered)
        return 0;                       /* not ours: exactly as the caller wrote it */
    size_t root = in_view(cfg, buf) ? strlen(cfg->root) : 0;
    size_t slash = len > 1 && mokka_path_names_dir(path);   /* "x/" must stay a directory */
    if (root + len + slash + 1 > size)
        return fail(ENAMETOOLONG);      /* never the host's path instead */
    memmove(buf + root, buf, len + 1);
    memcpy(buf, cfg->root, root);
    if (slash)
        memcpy(buf + root + len, "/", 2);
    *out = buf;
    return 0;
}
