/* The runtime documents the library writes (docfile.h): their bytes on disk. What
 * their lines mean is their owners' (../mig/mig_file.c, settings_file.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "docfile.h"
#include "file_id.h"
#include "regular.h"
#include "sha256.h"

#define HEADER_FMT "# mokka-nvml %s 1"
#define DIGEST_PREFIX "digest "

const char DOCFILE_ABSENT[] = "does not exist";
const char DOCFILE_NO_PERMISSION[] = "cannot be written here (permission denied or read-only)";

/* --- reading ------------------------------------------------------------------------ */

const char *docfile_read(int dirfd, const char *name, size_t max, const char *max_text, char **text,
                         size_t *len)
{
    static __thread char larger[64];
    *text = NULL;
    struct stat st;
    int fd = regular_open(dirfd, name, &st);     /* never opens a FIFO or a device */
    if (fd < 0)
        return errno == ENOENT ? DOCFILE_ABSENT
               : errno != EFTYPE_NOT_REGULAR ? "cannot be opened"
               : S_ISLNK(st.st_mode) ? "is a symbolic link" : "is not a regular file";
    const char *why = NULL;
    char *buf = NULL;
    snprintf(larger, sizeof larger, "is larger than %s", max_text);
    if ((size_t)st.st_size > max)
        why = larger;
    else if (!(buf = malloc(max + 2)))
        why = "cannot be read (no memory)";
    size_t used = 0;
    while (!why) {                                /* it may grow after fstat: read to EOF, bounded */
        ssize_t got = read(fd, buf + used, max + 1 - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            why = "cannot be read";
        else if (got == 0)
            break;
        else if ((used += (size_t)got) > max)
            why = larger;
    }
    close(fd);
    if (why) {
        free(buf);
        return why;
    }
    buf[used] = '\0';
    *text = buf;
    *len = used;
    return NULL;
}

int docfile_number(const char *s, size_t len, unsigned long long max, unsigned int *out)
{
    if (len == 0 || len > 10)
        return 0;
    unsigned long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (unsigned long long)(s[i] - '0');
    }
    if (v > max)
        return 0;
    *out = (unsigned int)v;
    return 1;
}

int docfile_field(const char **p, char sep, unsigned long long max, unsigned int *out)
{
    const char *end = sep ? strchr(*p, sep) : *p + strlen(*p);
    if (!end || !docfile_number(*p, (size_t)(end - *p), max, out))
        return 0;
    *p = sep ? end + 1 : end;
    return 1;
}

const char *docfile_parse(char *text, size_t len, const char *kind, docfile_line line_fn, void *ctx, int *holds)
{
    static __thread char not_one[96];
    char header[64];
    *holds = 0;
    if (memchr(text, '\0', len))
        return "holds a NUL byte";
    int hlen = snprintf(header, sizeof header, HEADER_FMT, kind);
    char *body = strchr(text, '\n');
    if (!body || body - text != hlen || strncmp(text, header, (size_t)hlen) != 0) {
        snprintf(not_one, sizeof not_one, "is not a %s companion of version 1", kind);
        return not_one;
    }
    body++;
    char *lines = strchr(body, '\n');
    if (!lines || strncmp(body, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) != 0)
        return "has no digest line";
    *lines++ = '\0';
    char digest[SHA256_DIGEST_TEXT_SIZE];
    sha256_digest_text(lines, len - (size_t)(lines - text), digest);
    if (strcmp(body + strlen(DIGEST_PREFIX), digest) != 0)
        return "does not match its digest (truncated or edited)";
    const char *prev = NULL;
    for (char *line = lines; *line;) {
        char *nl = strchr(line, '\n');
        if (!nl)
            return "does not end with a newline";
        *nl = '\0';
        if ((size_t)(nl - line) > DOCFILE_LINE_MAX)
            return "has a line too long to be one of its own";
        char *value = strchr(line, ' ');
        if (!value)
            return "has a line without a value";
        *value++ = '\0';
        if (prev && strcmp(prev, line) >= 0)
            return "has keys out of order or repeated";
        const char *why = line_fn(line, value, ctx);
        if (why) {
            *holds = 1;                           /* the line's owner names what it holds */
            return why;
        }
        prev = line;
        line = nl + 1;
    }
    return NULL;
}

/* --- writing ------------------------------------------------------------------------ */

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The lines sorted by key as one malloc'd text (NULL: no memory); *len its size. */
static char *render_body(char (*lines)[DOCFILE_LINE_MAX], size_t n, size_t *len)
{
    const char **order = malloc((n + 1) * sizeof *order);
    char *body = malloc(n * DOCFILE_LINE_MAX + 1);
    if (!order || !body) {
        free(order);
        free(body);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = lines[i];
    qsort(order, n, sizeof *order, by_key);     /* keys hold no space: as sorting by key */
    *len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(order[i]);
        memcpy(body + *len, order[i], l);
        body[*len + l] = '\n';
        *len += l + 1;
    }
    free(order);
    return body;
}

static const char *write_all(int fd, const char *const parts[2], const size_t sizes[2])
{
    for (int k = 0; k < 2; k++) {
        for (size_t done = 0; done < sizes[k];) {
            ssize_t w = write(fd, parts[k] + done, sizes[k] - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return "cannot be written (disk full?)";
            done += (size_t)w;
        }
    }
    return NULL;
}

const char *docfile_write(int dirfd, const char *name, const char *kind, char (*lines)[DOCFILE_LINE_MAX],
                          size_t n, size_t max)
{
    struct { char *buf; size_t len; } body;
    if (!(body.buf = render_body(lines, n, &body.len)) || body.len > max) {
        free(body.buf);
        return "cannot be written (no memory, or too large)";
    }
    char digest[SHA256_DIGEST_TEXT_SIZE], head[128];
    sha256_digest_text(body.buf, body.len, digest);
    int hlen = snprintf(head, sizeof head, HEADER_FMT "\n" DIGEST_PREFIX "%s\n", kind, digest);
    static unsigned int serial;
    char tmp[96];
    int fd = -1;
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {   /* a name a workload planted: another */
        snprintf(tmp, sizeof tmp, ".%s.%ld.%u.tmp", name, (long)getpid(),
                 __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    const char *why = NULL;
    if (fd < 0) {
        why = errno == EACCES || errno == EPERM || errno == EROFS ? DOCFILE_NO_PERMISSION : "cannot be written";
    } else {
        fchmod(fd, 0644);                         /* whatever the umask: every process reads it */
        const char *const parts[2] = {head, body.buf};
        const size_t sizes[2] = {(size_t)hlen, body.len};
        why = write_all(fd, parts, sizes);
        if (close(fd) != 0 && !why)
            why = "cannot be written";
        if (!why && renameat(dirfd, tmp, dirfd, name) != 0)
            why = errno == EACCES || errno == EPERM || errno == EROFS ? DOCFILE_NO_PERMISSION : "cannot be replaced";
        if (why)
            unlinkat(dirfd, tmp, 0);
    }
    free(body.buf);
    return why;
}

/* flock, not a lock file or compare-and-rename: the kernel drops it when its holder
 * dies, so a crash never leaves the node locked, and threads take it on their own open
 * file. The wait is bounded: a workload holding the lock makes changes fail, never hang. */
int docfile_lock(int dirfd, int wait_ms)
{
    long long deadline = monotonic_ms() + wait_ms;
    long wait_us = 200;
    for (;;) {
        if (flock(dirfd, LOCK_EX | LOCK_NB) == 0)
            return 1;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return 0;
        if (monotonic_ms() >= deadline)
            return 0;
        struct timespec ts = {0, wait_us * 1000};
        nanosleep(&ts, NULL);
        if (wait_us < 2000)                       /* short polls: flock is not fair to a sleeper */
            wait_us *= 2;
    }
}
