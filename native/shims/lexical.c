/* Lexical path normal form in a fixed buffer (see shim.h): no I/O, no
 * allocation. ".." is taken as text, as a shell's `cd -L` does, not through
 * the symlink it may follow. */
#include <string.h>

#include "shim.h"

const char *mokka_path_component(const char *at, size_t *n)
{
    while (*at == '/')
        at++;
    if (*at == '\0')
        return NULL;
    *n = strcspn(at, "/");
    return at;
}

static int is_dot(const char *c, size_t n)
{
    return n == 1 && c[0] == '.';
}

static int is_dotdot(const char *c, size_t n)
{
    return n == 2 && c[0] == '.' && c[1] == '.';
}

size_t mokka_path_apply(char *buf, size_t len, size_t size, const char *c, size_t n)
{
    if (is_dot(c, n))
        return len;
    if (is_dotdot(c, n)) {
        while (len > 1 && buf[len - 1] != '/')
            len--;
        if (len > 1)
            len--;                      /* "/a/" -> "/a"; "/" stays */
        return len;
    }
    size_t sep = len > 1;
    if (len + sep + n + 1 > size)
        return 0;
    if (sep)
        buf[len] = '/';
    memmove(buf + len + sep, c, n);     /* c may lie in buf itself, never before len */
    return len + sep + n;
}

size_t mokka_path_append(char *buf, size_t len, size_t size, const char *path)
{
    size_t n;
    for (const char *c = mokka_path_component(path, &n); c != NULL && len != 0;
         c = mokka_path_component(c + n, &n))
        len = mokka_path_apply(buf, len, size, c, n);
    if (len != 0)
        buf[len] = '\0';               /* only now: `path` may be the rest of buf */
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
    for (const char *c = mokka_path_component(path, &n); c != NULL;
         c = mokka_path_component(c + n, &n))
        if (is_dotdot(c, n))
            return 1;
    return 0;
}
