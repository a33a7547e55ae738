/* The prefix rewrite shared by the path shims (see shim.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

static int matches(const struct mokka_prefix *p, const char *path)
{
    size_t n = strlen(p->text);
    if (strncmp(path, p->text, n) != 0)
        return 0;
    return !p->whole || path[n] == '\0' || path[n] == '/';
}

const char *mokka_shim_rewrite(const struct mokka_shim_config *cfg, const char *path,
                               char *buf, size_t size)
{
    if (path == NULL || path[0] != '/' || cfg->root == NULL || cfg->root[0] != '/')
        return path;
    const struct mokka_prefix *p = cfg->prefixes;
    while (p->text != NULL && !matches(p, path))
        p++;
    if (p->text == NULL)
        return path;
    size_t root = strlen(cfg->root);
    while (root > 1 && cfg->root[root - 1] == '/')
        root--;                         /* "/x/" and "/x" are one root */
    size_t rest = strlen(path);
    if (root + rest + 1 > size) {
        errno = ENAMETOOLONG;           /* never the host's path instead */
        return NULL;
    }
    memcpy(buf, cfg->root, root);
    memcpy(buf + root, path, rest + 1);
    return buf;
}

/* Runs in constructors and signal handlers alike: no allocation, no lock. */
const char *mokka_shim_getenv(const char *name)
{
    extern char **environ;
    size_t n = strlen(name);
    for (char **e = environ; e != NULL && *e != NULL; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}
