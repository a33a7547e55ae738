/* The companion reader (see flat.h). */
#define _GNU_SOURCE
#include "flat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"

#define FLAT_MAX_BYTES (256u << 20)
#define FLAT_VERSION "1"

char *flat_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > FLAT_MAX_BYTES)
        goto fail;
    size_t cap = (size_t)st.st_size + 1, used = 0;
    buf = malloc(cap + 1);
    if (!buf)
        goto fail;
    for (;;) {                                    /* the file may grow: read to EOF */
        if (used == cap) {
            if (cap > FLAT_MAX_BYTES)
                goto fail;
            char *bigger = realloc(buf, cap * 2 + 1);
            if (!bigger)
                goto fail;
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + used, cap - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            goto fail;
        if (got == 0)
            break;
        used += (size_t)got;
    }
    close(fd);
    buf[used] = '\0';
    *len = used;
    return buf;
fail:
    free(buf);
    close(fd);
    return NULL;
}

static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && (r[1] == '\\' || r[1] == 'n' || r[1] == 'r')) {
            *w++ = r[1] == 'n' ? '\n' : r[1] == 'r' ? '\r' : '\\';
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* Cut the next line at *p: NUL-terminate it and advance *p past it. */
static char *next_line(char **p, char *end)
{
    if (*p >= end)
        return NULL;
    char *line = *p;
    char *nl = memchr(line, '\n', (size_t)(end - line));
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = end;
    }
    return line;
}

static enum flat_status parse(struct flat *f, size_t len, const char *kind, const char *want_digest)
{
    char *p = f->buf, *end = f->buf + len;
    char header[96];
    snprintf(header, sizeof header, "# mokka-nvml %s %s", kind, FLAT_VERSION);
    char *line = next_line(&p, end);
    if (!line || strcmp(line, header) != 0)
        return FLAT_INVALID;
    line = next_line(&p, end);
    if (!line || strncmp(line, "digest ", 7) != 0)
        return FLAT_INVALID;
    if (strcmp(line + 7, want_digest) != 0)
        return FLAT_STALE;
    size_t cap = 1;
    for (const char *q = p; q < end; q++)
        cap += *q == '\n';
    f->keys = malloc(cap * sizeof *f->keys);
    f->vals = malloc(cap * sizeof *f->vals);
    if (!f->keys || !f->vals)
        return FLAT_INVALID;
    while ((line = next_line(&p, end)) != NULL) {
        if (*line == '\0')
            continue;
        char *space = strchr(line, ' ');
        if (!space)
            return FLAT_INVALID;
        *space = '\0';
        if (f->n > 0 && strcmp(f->keys[f->n - 1], line) >= 0)
            return FLAT_INVALID;                  /* binary search needs strict order */
        unescape(space + 1);
        f->keys[f->n] = line;
        f->vals[f->n] = space + 1;
        f->n++;
    }
    return FLAT_OK;
}

enum flat_status flat_load(const char *yaml, const char *companion, const char *kind,
                           struct flat *out)
{
    memset(out, 0, sizeof *out);
    size_t ylen = 0, clen = 0;
    char *ybytes = flat_read_file(yaml, &ylen);
    if (!ybytes)
        return FLAT_YAML_MISSING;
    char digest[SHA256_DIGEST_TEXT_SIZE];
    sha256_digest_text(ybytes, ylen, digest);
    free(ybytes);
    out->buf = flat_read_file(companion, &clen);
    if (!out->buf)
        return FLAT_MISSING;
    out->len = clen;
    enum flat_status st = parse(out, clen, kind, digest);
    if (st != FLAT_OK)
        flat_free(out);
    return st;
}

void flat_free(struct flat *f)
{
    free(f->buf);
    free(f->keys);
    free(f->vals);
    memset(f, 0, sizeof *f);
}

/* The first index whose key is >= key. */
static size_t lower_bound(const struct flat *f, const char *key)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(f->keys[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const char *flat_get(const struct flat *f, const char *key)
{
    if (!f || f->n == 0)
        return NULL;
    size_t i = lower_bound(f, key);
    return i < f->n && strcmp(f->keys[i], key) == 0 ? f->vals[i] : NULL;
}

int flat_has_prefix(const struct flat *f, const char *prefix)
{
    if (!f || f->n == 0)
        return 0;
    size_t i = lower_bound(f, prefix);
    return i < f->n && strncmp(f->keys[i], prefix, strlen(prefix)) == 0;
}

int flat_parse_u64(const char *v, unsigned long long *out)
{
    if (!v || *v < '0' || *v > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno)
        return 0;
    *out = x;
    return 1;
}
