/* Lexical path normal form in a fixed buffer (see shim.h): no I/O, no
 * allocation. ".." is taken as text, as a shell's `cd -L` does, not through
 * the symlink it may follow. */
#include <string.h>

#include "shim.h"

/* The component at p (after any '/'), its length in *n; NULL past the end. */
static const char *component(const char *p, size_t *n)
{
    while (*p == '/')
        p++;
    if (*p == '\0')
        return NULL;
    *n = strcspn(p, "/");
    return p;
}

static int is_dot(const char *c, size_t n)
{
    return n == 1 && c[0] == '.';
}

static int is_dotdot(const char *c, size_t n)
{
    return n == 2 && c[0] == '.' && c[1] == '.';
}

size_t mokka_path_append(char *buf, size_t len, size_t size, const char *path)
{
    size_t n;
    for (const char *c = component(path, &n); c != NULL; c = component(c + n, &n)) {
        if (is_dot(c, n))
            continue;
        if (is_dotdot(c, n)) {
            while (len > 1 && buf[len - 1] != '/')
                len--;
            if (len > 1)
                len--;                  /* "/a/" -> "/a"; "/" stays */
            continue;
        }
        size_t sep = len > 1;
        if (len + sep + n + 1 > size)
            return 0;
        if (sep)
            buf[len] = '/';
        memmove(buf + len + sep, c, n); /* c may lie in buf itself, never before len */
        len += sep + n;
    }
    buf[len] = '\0';
    return len;
}

int mokka_path_names_dir(const char *path)
{
    size_t len = strlen(path), start = len;
    if (len == 0 || path[len - 1] == '/')
        return len > 0;
    while (start > 0 && path[start - 1] != '/')
        start--;
    return is_dot(path + start, len - start) || is_dotdot(path + start, len - start);
}

int mokka_path_climbs(const char *path)
{
    size_t n;
    for (const char *c = component(path, &n); c != NULL; c = component(c + n, &n))
        if (is_dotdot(c, n))
            return 1;
    return 0;
}
