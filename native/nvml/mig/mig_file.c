/* mig.nvml on disk: the node's MIG partitions as lines of Mokka's companion format,
 * one line per GPU mode and per instance, sorted by key as bytes:
 *
 *     # mokka-nvml mig 1
 *     digest sha256:<hex of every line after this one>
 *     gpu.0.gi.1 9 0:4              GPU instance 1: profile ID 9, placement 0:4
 *     gpu.0.gi.1.ci.0 2 0:3         its compute instance 0: profile ID 2, placement 0:3
 *     gpu.0.mode 1 1                MIG mode current, pending
 *     gpu.0.uuid GPU-...            the GPU the lines are for
 *
 * The digest covers the file's own lines (it has no YAML twin), so a truncated or
 * edited file is refused whole. Everything here is a workload's to write: the
 * reader is strict (every key and value spelt exactly so, every number bounded
 * before use, keys in order and unique, nothing followed, nothing waited on) and
 * says what it refused in a few words; mig_state.c then checks the partitions
 * against the board's table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/regular.h"
#include "engine/sha256.h"
#include "mig_file.h"

#define HEADER "# mokka-nvml " MOKKA_MIG_STATE_KIND " 1"
#define DIGEST_PREFIX "digest "
#define LINE_MAX_BYTES 256
#define GPUS MOKKA_MIG_STATE_GPUS                 /* the keys: names.MIG_STATE_* */
#define GI MOKKA_MIG_STATE_GPU_INSTANCE
#define CI MOKKA_MIG_STATE_COMPUTE_INSTANCE
#define UUID_CHARS "0123456789abcdefABCDEF-GPU"

const char MIG_FILE_ABSENT[] = "does not exist";
const char MIG_FILE_NO_PERMISSION[] = "cannot be written here (permission denied or read-only)";

/* --- reading ------------------------------------------------------------------------ */

const char *mig_file_read(int dirfd, char **text, size_t *len)
{
    *text = NULL;
    struct stat st;
    int fd = regular_open(dirfd, MOKKA_MIG_STATE_FILE, &st);   /* never opens a FIFO or a device */
    if (fd < 0)
        return errno == ENOENT ? MIG_FILE_ABSENT
               : errno != EFTYPE_NOT_REGULAR ? "cannot be opened"
               : S_ISLNK(st.st_mode) ? "is a symbolic link" : "is not a regular file";
    const char *why = NULL;
    char *buf = NULL;
    if (st.st_size > MOKKA_MIG_STATE_MAX_BYTES)
        why = "is larger than " MIG_FILE_MAX_TEXT;
    else if (!(buf = malloc(MOKKA_MIG_STATE_MAX_BYTES + 2)))
        why = "cannot be read (no memory)";
    size_t used = 0;
    while (!why) {                                /* it may grow after fstat: read to EOF, bounded */
        ssize_t got = read(fd, buf + used, MOKKA_MIG_STATE_MAX_BYTES + 1 - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            why = "cannot be read";
        else if (got == 0)
            break;
        else if ((used += (size_t)got) > MOKKA_MIG_STATE_MAX_BYTES)
            why = "is larger than " MIG_FILE_MAX_TEXT;
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

/* Digits only, at most `max`: 1 and *out. */
static int number(const char *s, size_t len, unsigned long long max, unsigned int *out)
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

/* "<a><sep>" at *p: the number, *p past the separator (sep '\0': to the end). */
static int field(const char **p, char sep, unsigned long long max, unsigned int *out)
{
    const char *end = sep ? strchr(*p, sep) : *p + strlen(*p);
    if (!end || !number(*p, (size_t)(end - *p), max, out))
        return 0;
    *p = sep ? end + 1 : end;
    return 1;
}

/* "<profile id> <start>:<size>" */
static int instance_value(const char *v, unsigned int *profile_id, unsigned int *start, unsigned int *size)
{
    return field(&v, ' ', 0xffffffffu, profile_id) && field(&v, ':', MIG_MEMORY_SLICES - 1, start) &&
           field(&v, '\0', MIG_MEMORY_SLICES, size);
}

static int uuid_value(const char *v, char out[MIG_FILE_UUID_MAX])
{
    size_t len = strlen(v);
    if (len == 0 || len >= MIG_FILE_UUID_MAX || strspn(v, UUID_CHARS) != len)
        return 0;
    memcpy(out, v, len + 1);
    return 1;
}

/* One "<key> <value>" line into f. */
static const char *parse_line(const char *key, const char *value, unsigned int count, struct mig_file *f)
{
    const char *p = key;
    unsigned int phys, gi, ci;
    if (strncmp(p, GPUS ".", sizeof GPUS) != 0 || (p += sizeof GPUS, !field(&p, '.', count ? count - 1 : 0, &phys)) ||
        phys >= count)
        return "a GPU the node does not have";
    struct mig_file_gpu *g = &f->gpu[phys];
    if (strcmp(p, MOKKA_MIG_STATE_UUID) == 0)
        return uuid_value(value, g->uuid) ? NULL : "a GPU UUID that is not one";
    if (strcmp(p, MOKKA_MIG_STATE_MODE) == 0) {
        const char *v = value;
        if (!field(&v, ' ', 1, &g->current) || !field(&v, '\0', 1, &g->pending))
            return "a MIG mode other than 0 or 1";
        g->has_mode = 1;
        return NULL;
    }
    if (strncmp(p, GI ".", sizeof GI) != 0)
        return "an unknown key";
    p += sizeof GI;
    const char *dot = strchr(p, '.');
    if (!number(p, dot ? (size_t)(dot - p) : strlen(p), MIG_GI_IDS - 1, &gi))
        return "a GPU instance id out of range";
    struct mig_file_gi *e = &g->gi[gi];
    if (!dot) {
        e->present = 1;
        return instance_value(value, &e->profile_id, &e->start, &e->size) ? NULL : "a bad GPU instance";
    }
    p = dot + 1;
    if (strncmp(p, CI ".", sizeof CI) != 0 || (p += sizeof CI, !field(&p, '\0', MIG_CI_IDS - 1, &ci)))
        return "a compute instance id out of range";
    if (!e->present)
        return "a compute instance of a GPU instance the file does not have";
    e->ci[ci].present = 1;
    return instance_value(value, &e->ci[ci].profile_id, &e->ci[ci].start, &e->ci[ci].size)
               ? NULL : "a bad compute instance";
}

const char *mig_file_parse(char *text, size_t len, unsigned int count, struct mig_file *f, int *holds)
{
    memset(f, 0, sizeof *f);
    *holds = 0;
    if (memchr(text, '\0', len))
        return "holds a NUL byte";
    char *body = strchr(text, '\n');
    if (!body || (size_t)(body - text) != strlen(HEADER) || strncmp(text, HEADER, strlen(HEADER)) != 0)
        return "is not a " MOKKA_MIG_STATE_KIND " companion of version 1";
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
        if ((size_t)(nl - line) > LINE_MAX_BYTES)
            return "has a line too long to be one of its own";
        char *value = strchr(line, ' ');
        if (!value)
            return "has a line without a value";
        *value++ = '\0';
        if (prev && strcmp(prev, line) >= 0)
            return "has keys out of order or repeated";
        const char *why = parse_line(line, value, count, f);
        if (why) {
            *holds = 1;                           /* parse_line names what the line holds */
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

/* How many lines GPU g of the file takes. */
static size_t lines_of(const struct mig_file_gpu *g)
{
    size_t n = g->has_mode ? 1 + (g->uuid[0] != '\0') : 0;
    for (unsigned int i = 0; g->has_mode && i < MIG_GI_IDS; i++) {
        n += g->gi[i].present;
        for (unsigned int c = 0; g->gi[i].present && c < MIG_CI_IDS; c++)
            n += g->gi[i].ci[c].present;
    }
    return n;
}

/* The file's lines, sorted by key, as one malloc'd text (NULL: no memory); *len its size. */
static char *render_body(const struct mig_file *f, unsigned int count, size_t *len)
{
    size_t want = 0, n = 0;
    for (unsigned int p = 0; p < count; p++)
        want += lines_of(&f->gpu[p]);
    char (*lines)[LINE_MAX_BYTES] = malloc((want + 1) * LINE_MAX_BYTES);
    const char **order = malloc((want + 1) * sizeof *order);
    char *body = malloc(want * LINE_MAX_BYTES + 1);
    if (!lines || !order || !body) {
        free(lines);
        free(order);
        free(body);
        return NULL;
    }
    for (unsigned int p = 0; p < count; p++) {
        const struct mig_file_gpu *g = &f->gpu[p];
        if (!g->has_mode)
            continue;
        if (g->uuid[0])
            snprintf(lines[n++], LINE_MAX_BYTES, GPUS ".%u." MOKKA_MIG_STATE_UUID " %s", p, g->uuid);
        snprintf(lines[n++], LINE_MAX_BYTES, GPUS ".%u." MOKKA_MIG_STATE_MODE " %u %u", p, g->current, g->pending);
        for (unsigned int i = 0; i < MIG_GI_IDS; i++) {
            const struct mig_file_gi *e = &g->gi[i];
            if (!e->present)
                continue;
            snprintf(lines[n++], LINE_MAX_BYTES, GPUS ".%u." GI ".%u %u %u:%u", p, i, e->profile_id, e->start, e->size);
            for (unsigned int c = 0; c < MIG_CI_IDS; c++)
                if (e->ci[c].present)
                    snprintf(lines[n++], LINE_MAX_BYTES, GPUS ".%u." GI ".%u." CI ".%u %u %u:%u", p, i, c,
                             e->ci[c].profile_id, e->ci[c].start, e->ci[c].size);
        }
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
    free(lines);
    free(order);
    return body;
}

const char *mig_file_write(int dirfd, const struct mig_file *f, unsigned int count)
{
    struct { char *buf; size_t len; } body;
    if (!(body.buf = render_body(f, count, &body.len)) || body.len > MOKKA_MIG_STATE_MAX_BYTES) {
        free(body.buf);
        return "cannot be written (no memory, or too large)";
    }
    char digest[SHA256_DIGEST_TEXT_SIZE], head[sizeof HEADER + sizeof DIGEST_PREFIX + SHA256_DIGEST_TEXT_SIZE + 4];
    sha256_digest_text(body.buf, body.len, digest);
    int hlen = snprintf(head, sizeof head, HEADER "\n" DIGEST_PREFIX "%s\n", digest);
    static unsigned int serial;
    char tmp[96];
    int fd = -1;
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {   /* a name a workload planted: another */
        snprintf(tmp, sizeof tmp, "." MOKKA_MIG_STATE_FILE ".%ld.%u.tmp", (long)getpid(),
                 __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    const char *why = NULL;
    if (fd < 0) {
        why = errno == EACCES || errno == EPERM || errno == EROFS ? MIG_FILE_NO_PERMISSION : "cannot be written";
    } else {
        fchmod(fd, 0644);                         /* whatever the umask: every process reads it */
        const char *parts[] = {head, body.buf};
        size_t sizes[] = {(size_t)hlen, body.len};
        for (int k = 0; k < 2 && !why; k++) {
            for (size_t done = 0; done < sizes[k];) {
                ssize_t w = write(fd, parts[k] + done, sizes[k] - done);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0) {
                    why = "cannot be written (disk full?)";
                    break;
                }
                done += (size_t)w;
            }
        }
        if (close(fd) != 0 && !why)
            why = "cannot be written";
        if (!why && renameat(dirfd, tmp, dirfd, MOKKA_MIG_STATE_FILE) != 0)
            why = errno == EACCES || errno == EPERM || errno == EROFS ? MIG_FILE_NO_PERMISSION : "cannot be replaced";
        if (why)
            unlinkat(dirfd, tmp, 0);
    }
    free(body.buf);
    return why;
}
