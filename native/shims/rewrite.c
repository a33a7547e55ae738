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

static int redirected(const struct mokka_shim_config *cfg, const char *path)
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

/* buf: the normal form of the directory `base`; as the mock view's path (the
 * root taken off) when it is a redirected directory inside the root. Its
 * length, with *view set for the latter. */
static size_t start_from(const struct mokka_shim_config *cfg, const char *base, char *buf,
                         size_t size, int *view)
{
    buf[0] = '/';
    size_t len = mokka_path_append(buf, 1, size, base);
    size_t root = len != 0 ? inside_root(cfg, buf) : 0;
    *view = root != 0 && redirected(cfg, buf + root);
    if (*view) {
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

int mokka_shim_rewrite(const struct mokka_shim_config *cfg, const char *base, const char *path,
                       char *buf, size_t size, const char **out)
{
    *out = path;
    if (!considered(cfg, path))
        return 0;
    int view = 0;
    size_t len = 1;
    if (path[0] == '/') {
        buf[0] = '/';
    } else if (base == NULL || base[0] != '/') {
        /* Where it starts is unknown: without ".." it cannot leave that directory. */
        return mokka_path_climbs(path) ? fail(ENOENT) : 0;
    } else {
        len = start_from(cfg, base, buf, size, &view);
    }
    len = len != 0 ? mokka_path_append(buf, len, size, path) : 0;
    if (len == 0)
        return fail(ENAMETOOLONG);
    int redirect = inside_root(cfg, buf) == 0 && redirected(cfg, buf);
    if (!redirect && !view)
        return 0;                       /* not ours: exactly as the caller wrote it */
    size_t root = redirect ? strlen(cfg->root) : 0;
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
