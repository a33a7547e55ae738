/* The companion format: reading what a workload may have written (see flat.h). */
#define _GNU_SOURCE
#include "flat.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32.h"
#include "mokka_names.h"
#include "regular.h"
#include "sha256.h"

#define HEADER_PREFIX "# mokka-nvml "
#define DIGEST_PREFIX "digest "
#define BODY_PREFIX "body "
#define CRC_PREFIX " crc32:"
#define HEADER_LINES 3
#define LEN_SUFFIX "." MOKKA_COMPANION_LEN_KEY
#define YAML_CHUNK (64u * 1024u)

static void say(struct flat_why *why, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(struct flat_why *why, const char *file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    why->file = file;
    vsnprintf(why->reason, sizeof why->reason, fmt, ap);
    va_end(ap);
}

/* --- opening a file a workload may have replaced ---------------------------- */

static const char *not_regular(mode_t mode)
{
    return S_ISLNK(mode)   ? "a symbolic link, not followed"
           : S_ISFIFO(mode) ? "a FIFO, not a regular file"
           : S_ISDIR(mode)  ? "a directory, not a regular file"
           : S_ISSOCK(mode) ? "a socket, not a regular file"
                            : "a device, not a regular file";
}

/* A descriptor of `path` (relative to dirfd), a regular file of at most `max` bytes,
 * and its size in *size; or -1 with *status (`missing` when there is no such file). */
static int open_regular(int dirfd, const char *path, size_t max, enum flat_status missing, size_t *size,
                        enum flat_status *status, struct flat_why *why)
{
    struct stat st;
    *status = FLAT_REFUSED;
    int fd = regular_open(dirfd, path, &st);     /* never opens a FIFO or a device */
    if (fd < 0) {
        int absent = errno == ENOENT || errno == ENOTDIR;
        if (absent)
            *status = missing;
        if (errno == EFTYPE_NOT_REGULAR)
            say(why, path, "%s", not_regular(st.st_mode));
        else
            say(why, path, "%s", absent ? "missing" : strerror(errno));
        return -1;
    }
    if ((unsigned long long)st.st_size > max) {
        say(why, path, "larger than %zu bytes", max);
        close(fd);
        return -1;
    }
    *size = (size_t)st.st_size;
    return fd;
}

/* The companion whole. fstat found it `size` bytes long; one byte more is asked for, so
 * a file that grew or shrank since (written in place, not renamed) is refused, not
 * read in part. */
static enum flat_status read_companion(int dirfd, const char *path, size_t max, struct flat *f,
                                       struct flat_why *why)
{
    enum flat_status status;
    size_t size = 0, used = 0;
    int fd = open_regular(dirfd, path, max, FLAT_MISSING, &size, &status, why);
    if (fd < 0)
        return status;
    char *buf = malloc(size + 2);
    ssize_t got = 1;
    while (buf && got != 0 && used <= size) {
        got = read(fd, buf + used, size + 1 - used);
        if (got < 0 && errno != EINTR)
            break;
        if (got > 0)
            used += (size_t)got;
    }
    close(fd);
    if (!buf || got < 0 || used != size) {
        free(buf);
        say(why, path, "%s", buf && got >= 0 ? "changed while it was read" : "unreadable");
        return FLAT_REFUSED;
    }
    buf[used] = '\0';
    f->buf = buf;
    f->len = used;
    return FLAT_OK;
}

/* The digest of the YAML, read in chunks (it is never kept). */
static enum flat_status hash_yaml(int dirfd, const char *path, char digest[SHA256_DIGEST_TEXT_SIZE],
                                  struct flat_why *why)
{
    enum flat_status status;
    size_t size = 0, total = 0;
    int fd = open_regular(dirfd, path, MOKKA_MAX_DOCUMENT_BYTES, FLAT_YAML_MISSING, &size, &status, why);
    if (fd < 0)
        return status;
    unsigned char *chunk = malloc(YAML_CHUNK);
    struct sha256 s;
    sha256_init(&s);
    int blank = 1;
    status = chunk ? FLAT_OK : FLAT_REFUSED;
    while (status == FLAT_OK) {
        ssize_t got = read(fd, chunk, YAML_CHUNK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            status = got == 0 ? FLAT_OK : FLAT_REFUSED;
            break;
        }
        total += (size_t)got;
        if (total > MOKKA_MAX_DOCUMENT_BYTES) {   /* it grew past the bound */
            status = FLAT_REFUSED;
            break;
        }
        sha256_update(&s, chunk, (size_t)got);
        for (ssize_t i = 0; blank && i < got; i++)
            blank = isspace(chunk[i]) != 0;
    }
    free(chunk);
    close(fd);
    if (status != FLAT_OK) {
        if (total > MOKKA_MAX_DOCUMENT_BYTES)
            say(why, path, "larger than %d bytes", MOKKA_MAX_DOCUMENT_BYTES);
        else
            say(why, path, "unreadable");
        return status;
    }
    why->yaml_blank = blank;
    sha256_final_text(&s, digest);
    return FLAT_OK;
}

/* --- parsing ------------------------------------------------------------------ */

/* Cut the next line at *p: NUL-terminate it and advance *p past it (NULL at the end). */
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

static int parse_hex32(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
        if (d == 16)
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return s[8] == '\0';
}

/* The first line: this kind, this version. */
static enum flat_status check_header(const char *line, const struct flat_kind *kind, const char *path,
                                     struct flat_why *why)
{
    size_t plen = strlen(HEADER_PREFIX), klen = strlen(kind->name);
    if (!line || strncmp(line, HEADER_PREFIX, plen) != 0) {
        say(why, path, "not a Mokka companion");
        return FLAT_INVALID;
    }
    line += plen;
    if (strncmp(line, kind->name, klen) != 0 || (line[klen] != ' ' && line[klen] != '\0')) {
        say(why, path, "a companion of another kind, not %s", kind->name);
        return FLAT_INVALID;
    }
    if (line[klen] == '\0' || strcmp(line + klen + 1, FLAT_FORMAT_VERSION) != 0) {
        say(why, path, "written in another format version, not %s", FLAT_FORMAT_VERSION);
        return FLAT_INVALID;
    }
    return FLAT_OK;
}

/* The third line: the body's length and checksum, against the bytes that follow. */
static enum flat_status check_body(const char *line, const char *body, size_t len, const char *path,
                                   struct flat_why *why)
{
    size_t plen = strlen(BODY_PREFIX);
    const char *crc = line ? strstr(line, CRC_PREFIX) : NULL;
    char number[24];
    unsigned long long stated;
    uint32_t want;
    if (!crc || strncmp(line, BODY_PREFIX, plen) != 0 || (size_t)(crc - line) - plen >= sizeof number) {
        say(why, path, "malformed at line %d", HEADER_LINES);
        return FLAT_INVALID;
    }
    memcpy(number, line + plen, (size_t)(crc - line) - plen);
    number[(size_t)(crc - line) - plen] = '\0';
    if (!flat_parse_u64(number, &stated) || !parse_hex32(crc + strlen(CRC_PREFIX), &want)) {
        say(why, path, "malformed at line %d", HEADER_LINES);
        return FLAT_INVALID;
    }
    if (stated != len) {
        say(why, path, "truncated or edited: its length is not the one its header states");
        return FLAT_INVALID;
    }
    if (crc32_of(body, len) != want) {
        say(why, path, "truncated or edited: its checksum is not the one its header states");
        return FLAT_INVALID;
    }
    return FLAT_OK;
}

/* Whether `key` (`klen` bytes, ending in `.len`) is the length of list `list`
 * (`a.%u.b` matches `a.7.b.len`). */
static int is_list_len(const char *list, const char *key, size_t klen)
{
    const char *p = list, *k = key, *end = key + klen - strlen(LEN_SUFFIX);
    while (*p) {
        if (p[0] == '%' && p[1] == 'u') {
            if (k == end || !isdigit((unsigned char)*k))
                return 0;
            while (k < end && isdigit((unsigned char)*k))
                k++;
            p += 2;
        } else if (k == end || *p++ != *k++) {
            return 0;
        }
    }
    return k == end;
}

/* `<items>.<n>.rest` -> rest, else NULL. */
static const char *past_item(const char *items, const char *key)
{
    size_t ilen = strlen(items);
    if (strncmp(key, items, ilen) != 0 || key[ilen] != '.' || !isdigit((unsigned char)key[ilen + 1]))
        return NULL;
    const char *p = key + ilen + 1;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '.' ? p + 1 : NULL;
}

/* `a.%u.b` as a reader sees it: `a.N.b`. */
static const char *spelt(const char *list, char *out, size_t size)
{
    size_t w = 0;
    for (const char *p = list; *p && w + 2 < size; p++) {
        int item = p[0] == '%' && p[1] == 'u';
        out[w++] = item ? 'N' : *p;
        p += item;
    }
    out[w] = '\0';
    return out;
}

/* A list length's line (`key` of `klen` bytes, ending in `.len`): its value a number no
 * larger than its kind's bound for that list, or no list the kind bounds. */
static int list_len_ok(const struct flat_kind *kind, const char *key, size_t klen, const char *value,
                       const char *path, struct flat_why *why)
{
    const char *rest = kind->items ? past_item(kind->items, key) : NULL;
    const struct flat_list *table = rest ? kind->item_lists : kind->lists;
    if (!rest)
        rest = key;
    for (; table && table->key; table++) {
        if (!is_list_len(table->key, rest, klen - (size_t)(rest - key)))
            continue;
        unsigned long long items;
        char name[128];
        if (!flat_parse_u64(value, &items))
            say(why, path, "the length of a list %s is not a number", spelt(table->key, name, sizeof name));
        else if (items > table->most)
            say(why, path, "a list %s longer than %llu items", spelt(table->key, name, sizeof name), table->most);
        else
            return 1;
        return 0;
    }
    return 1;
}

static enum flat_status parse_body(struct flat *f, char *p, char *end, const struct flat_kind *kind,
                                   const char *path, struct flat_why *why)
{
    size_t lines = 0;
    for (const char *q = p; q < end && (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        lines++;
    if (lines > kind->max_lines) {
        say(why, path, "more than %zu lines", kind->max_lines);
        return FLAT_INVALID;
    }
    if (p < end && end[-1] != '\n') {
        say(why, path, "malformed at line %zu", HEADER_LINES + lines + 1);
        return FLAT_INVALID;
    }
    f->keys = malloc((lines ? lines : 1) * sizeof *f->keys);
    if (!f->keys) {
        say(why, path, "too large to load");
        return FLAT_REFUSED;
    }
    while (p < end) {                             /* every line ends with a newline (above) */
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *space = memchr(p, ' ', (size_t)(nl - p));
        size_t at = HEADER_LINES + f->n + 1;
        if (!space || space == p) {
            say(why, path, "malformed at line %zu", at);
            return FLAT_INVALID;
        }
        *space = '\0';
        *nl = '\0';
        if (f->n > 0 && strcmp(f->keys[f->n - 1], p) >= 0) {
            say(why, path, "keys out of order at line %zu", at);  /* binary search needs strict order */
            return FLAT_INVALID;
        }
        if (memchr(space + 1, '\\', (size_t)(nl - space - 1)))
            unescape(space + 1);
        size_t klen = (size_t)(space - p), slen = strlen(LEN_SUFFIX);
        if (klen > slen && memcmp(space - slen, LEN_SUFFIX, slen) == 0 &&
            !list_len_ok(kind, p, klen, space + 1, path, why))
            return FLAT_INVALID;
        f->keys[f->n++] = p;
        p = nl + 1;
    }
    return FLAT_OK;
}

static enum flat_status parse(struct flat *f, const struct flat_kind *kind, const char *want_digest,
                              const char *path, struct flat_why *why)
{
    char *p = f->buf, *end = f->buf + f->len;
    if (memchr(f->buf, '\0', f->len)) {
        say(why, path, "holds a NUL byte");
        return FLAT_INVALID;
    }
    enum flat_status st = check_header(next_line(&p, end), kind, path, why);
    if (st != FLAT_OK)
        return st;
    const char *digest = next_line(&p, end);
    if (!digest || strncmp(digest, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) != 0) {
        say(why, path, "malformed at line 2");
        return FLAT_INVALID;
    }
    digest += strlen(DIGEST_PREFIX);
    if (strcmp(digest, want_digest) != 0) {
        say(why, path, "stale: not compiled from this YAML");
        return FLAT_STALE;
    }
    const char *body_line = next_line(&p, end);
    st = check_body(body_line, p, (size_t)(end - p), path, why);
    if (st != FLAT_OK)
        return st;
    st = parse_body(f, p, end, kind, path, why);
    if (st != FLAT_OK)
        return st;
    if (kind->check && !kind->check(f, why->reason, sizeof why->reason)) {
        why->file = path;
        return FLAT_INVALID;
    }
    return FLAT_OK;
}

enum flat_status flat_load(int dirfd, const char *yaml, const char *companion, const struct flat_kind *kind,
                           struct flat *out, struct flat_why *why)
{
    memset(out, 0, sizeof *out);
    memset(why, 0, sizeof *why);
    char digest[SHA256_DIGEST_TEXT_SIZE];
    enum flat_status st = hash_yaml(dirfd, yaml, digest, why);
    if (st == FLAT_OK)
        st = read_companion(dirfd, companion, kind->max_bytes, out, why);
    if (st == FLAT_OK)
        st = parse(out, kind, digest, companion, why);
    if (st != FLAT_OK)
        flat_free(out);
    return st;
}

void flat_free(struct flat *f)
{
    free(f->buf);
    free(f->keys);
    memset(f, 0, sizeof *f);
}

/* --- lookups ----------------------------------------------------------------- */

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

const char *flat_value_at(const struct flat *f, size_t i)
{
    return f->keys[i] + strlen(f->keys[i]) + 1;
}

const char *flat_get(const struct flat *f, const char *key)
{
    if (!f || f->n == 0)
        return NULL;
    size_t i = lower_bound(f, key);
    return i < f->n && strcmp(f->keys[i], key) == 0 ? flat_value_at(f, i) : NULL;
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

int flat_open_dir(int dirfd, const char *path)
{
    return openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}
