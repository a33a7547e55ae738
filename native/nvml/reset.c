/* GPU reset: what NVIDIA's `nvidia-smi -r -i N` does over the mock.
 *
 * A reset drops the GPUs' buckets of runtime overrides, as our Python
 * `nvidia-smi -r` and `mokka ctl reset N` do (mokka/smi/overrides.reset): under
 * the same lock (flock on the directory of overrides.yaml) and in the same
 * order (the companion renamed into place first, the YAML last, each through a
 * temporary file). The library does not parse YAML, so it edits the text:
 *
 *   the top-level `devices:` block, in block style, loses each entry whose key
 *   is the physical index (`1:`, `'1':` or `"1":`) and every line indented
 *   under it; a block left empty becomes `devices: {}`, as PyYAML writes it;
 *   the companion loses the lines `devices.<index>.…` and gets the new digest.
 *
 * That is exactly what every Mokka writer produces (PyYAML's block style), so
 * the pair is what Python's reset would have written. A hand-written file the
 * line editor cannot follow (flow style, tabs, a list, an anchor inside the
 * entry) or a companion that does not match its YAML is left alone, and the
 * reset fails with one line naming the file: a reset never half-applies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mock.h"
#include "sha256.h"

#define COMPANION_HEADER "# mokka-nvml overrides "
#define DIGEST_PREFIX "digest "

enum { REFUSE = -1, UNCHANGED = 0, CHANGED = 1 };

struct buf {
    char *p;
    size_t len, cap;
};

static int put(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 1;
}

/* The line at s (up to end): its length with the newline. */
static size_t line_len(const char *s, const char *end)
{
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    return nl ? (size_t)(nl - s) + 1 : (size_t)(end - s);
}

/* Leading spaces; -1 when a tab comes before the content (PyYAML never writes one). */
static int indent_of(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    return i < n && s[i] == '\t' ? -1 : (int)i;
}

static int blank_or_comment(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i == n || s[i] == '\n' || s[i] == '\r' || s[i] == '#';
}

static int all_space(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return 0;
    return 1;
}

/* Only spaces, then a comment or the end of the line, from s. */
static int rest_empty(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    return i == n || s[i] == '\n' || s[i] == '\r' || s[i] == '#';
}

/* An entry line at the block's indentation: 1 if its key is `want`, 0 if another
 * key, -1 if it is not a plain `key:` line the editor can follow. */
static int entry_is(const char *s, size_t n, const char *want)
{
    if (n == 0 || s[0] == '-' || s[0] == '?' || s[0] == '&' || s[0] == '*' || s[0] == '{' || s[0] == '[')
        return -1;
    const char *key = s, *colon;
    size_t klen;
    if (s[0] == '\'' || s[0] == '"') {
        const char *close = memchr(s + 1, s[0], n - 1);
        if (!close || close + 1 >= s + n || close[1] != ':')
            return -1;
        key = s + 1;
        klen = (size_t)(close - key);
        colon = close + 1;
    } else {
        colon = memchr(s, ':', n);
        if (!colon)
            return -1;
        klen = (size_t)(colon - s);
        while (klen > 0 && key[klen - 1] == ' ')
            klen--;
    }
    if (colon + 1 < s + n && colon[1] != ' ' && colon[1] != '\n' && colon[1] != '\r')
        return -1;
    return klen == strlen(want) && memcmp(key, want, klen) == 0;
}

/* The YAML text without GPU `phys`'s bucket of the top-level `devices:` mapping. */
static int drop_from_yaml(const char *text, size_t len, const char *phys, struct buf *out, const char **why)
{
    const char *end = text + len, *s = text, *header = NULL;
    size_t header_len = 0;
    int removed = 0, kept = 0, removing = 0, d = -1;
    struct buf block = {0};
    int ok = 1;
    while (s < end && ok) {
        size_t n = line_len(s, end);
        if (!header) {
            if (n >= 8 && memcmp(s, "devices:", 8) == 0) {
                if (!rest_empty(s + 8, n - 8)) {
                    if (!(n >= 11 && memcmp(s + 8, " {}", 3) == 0 && rest_empty(s + 11, n - 11))) {
                        *why = "its devices are not in block style";
                        free(block.p);
                        return REFUSE;
                    }
                    ok = put(out, s, n);        /* `devices: {}`: no bucket to drop */
                } else {
                    header = s;
                    header_len = n;
                }
            } else {
                ok = put(out, s, n);
            }
            s += n;
            continue;
        }
        if (blank_or_comment(s, n)) {
            if (!removing)
                ok = put(&block, s, n);
            s += n;
            continue;
        }
        int in = indent_of(s, n);
        if (in < 0) {
            *why = "it indents with tabs";
            free(block.p);
            return REFUSE;
        }
        if (in == 0)
            break;                                /* the next top-level key ends the block */
        if (d < 0)
            d = in;
        if (in < d) {
            *why = "its devices block is indented unevenly";
            free(block.p);
            return REFUSE;
        }
        if (in == d) {
            int is = entry_is(s + in, n - (size_t)in, phys);
            if (is < 0) {
                *why = "its devices are not a block mapping";
                free(block.p);
                return REFUSE;
            }
            removing = is;
            removed += is;
            kept += !is;
        }
        if (removing && memchr(s, '&', n)) {
            *why = "the GPU's entry defines an anchor";
            free(block.p);
            return REFUSE;
        }
        if (!removing)
            ok = put(&block, s, n);
        s += n;
    }
    if (header && ok) {
        if (removed && !kept) {
            const char *nl = header[header_len - 1] == '\n' ? "\n" : "";
            ok = put(out, "devices: {}", 11) && put(out, nl, strlen(nl));
        } else {
            ok = put(out, header, header_len);
        }
        if (ok && block.len)
            ok = put(out, block.p, block.len);
        if (ok && s < end)
            ok = put(out, s, (size_t)(end - s));
    }
    free(block.p);
    if (!ok) {
        *why = "out of memory";
        return REFUSE;
    }
    return removed ? CHANGED : UNCHANGED;
}

/* The companion without `devices.<phys>.` lines; *dropped counts them. */
static int drop_from_companion(const char *text, size_t len, const char *phys, const char *old_digest,
                               const char *new_digest, struct buf *out, int *dropped, const char **why)
{
    const char *end = text + len, *s = text;
    char prefix[40];
    snprintf(prefix, sizeof prefix, "devices.%s.", phys);
    size_t plen = strlen(prefix);
    int line = 0;
    *dropped = 0;
    while (s < end) {
        size_t n = line_len(s, end);
        int ok;
        if (line == 0 && (n < sizeof COMPANION_HEADER - 1 ||
                          memcmp(s, COMPANION_HEADER, sizeof COMPANION_HEADER - 1) != 0)) {
            *why = "its companion is not an overrides companion";
            return REFUSE;
        }
        if (line == 1) {
            size_t dl = strlen(DIGEST_PREFIX) + strlen(old_digest);
            if (n < dl || memcmp(s, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) != 0 ||
                memcmp(s + strlen(DIGEST_PREFIX), old_digest, strlen(old_digest)) != 0 ||
                (n > dl && s[dl] != '\n')) {
                *why = "its companion does not match it";
                return REFUSE;
            }
            ok = put(out, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) && put(out, new_digest, strlen(new_digest)) &&
                 put(out, "\n", 1);
        } else if (line > 1 && n >= plen && memcmp(s, prefix, plen) == 0) {
            ++*dropped;
            ok = 1;
        } else {
            ok = put(out, s, n);
        }
        if (!ok) {
            *why = "out of memory";
            return REFUSE;
        }
        s += n;
        line++;
    }
    if (line < 2) {
        *why = "its companion is cut short";
        return REFUSE;
    }
    return UNCHANGED;
}

/* Write through a temporary file in the same directory and a rename. */
static int write_atomic(const char *path, const char *data, size_t len, mode_t mode)
{
    char tmp[MOCK_PATH_MAX + 16], copy[MOCK_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    const char *slash = strrchr(path, '/');
    int n = slash ? snprintf(tmp, sizeof tmp, "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1)
                  : snprintf(tmp, sizeof tmp, ".%s.XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            goto fail;
        done += (size_t)w;
    }
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0)
        goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto fail;
    return 0;
fail:;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    errno = saved;
    return -1;
}

static nvmlReturn_t io_error(const char *what, const char *path)
{
    int e = errno;
    mock_say("cannot reset: %s %s: %s", what, path, strerror(e));
    return e == EACCES || e == EPERM || e == EROFS ? NVML_ERROR_NO_PERMISSION : NVML_ERROR_UNKNOWN;
}

/* Drop physical GPU `phys`'s overrides; the caller holds the directory lock. */
static nvmlReturn_t drop_locked(const char *yaml, const char *nvml, unsigned int phys)
{
    char key[16];
    snprintf(key, sizeof key, "%u", phys);
    struct stat st;
    if (stat(yaml, &st) != 0)
        return errno == ENOENT ? NVML_SUCCESS : io_error("reading", yaml);
    size_t ylen = 0, clen = 0;
    char *ytext = flat_read_file(yaml, &ylen);
    if (!ytext)
        return io_error("reading", yaml);
    char *ctext = flat_read_file(nvml, &clen);
    const char *why = NULL;
    struct buf ynew = {0}, cnew = {0};
    nvmlReturn_t ret = NVML_SUCCESS;
    int r = drop_from_yaml(ytext, ylen, key, &ynew, &why);
    if ((r == CHANGED || r == UNCHANGED) && !ctext) {
        if (r == UNCHANGED && all_space(ytext, ylen)) {
            free(ytext);                          /* an empty file: nothing to drop, nothing to match */
            free(ynew.p);
            return NVML_SUCCESS;
        }
        why = "it has no companion";
        r = REFUSE;
    }
    if (r == CHANGED || r == UNCHANGED) {
        char old_digest[SHA256_DIGEST_TEXT_SIZE], new_digest[SHA256_DIGEST_TEXT_SIZE];
        sha256_digest_text(ytext, ylen, old_digest);
        sha256_digest_text(ynew.p ? ynew.p : "", ynew.len, new_digest);
        int dropped = 0;
        if (drop_from_companion(ctext, clen, key, old_digest, new_digest, &cnew, &dropped, &why) == REFUSE)
            r = REFUSE;
        else if (r == UNCHANGED && dropped) {
            why = "its devices are not where a block-style editor finds them";
            r = REFUSE;
        }
    }
    if (r == REFUSE) {
        mock_say("cannot reset GPU %u: %s is not as Mokka writes it (%s); "
                 "clear it with 'nvml-mock-ctl reset' or by hand", phys, yaml, why);
        ret = NVML_ERROR_NOT_SUPPORTED;
    } else if (r == CHANGED) {
        mode_t mode = st.st_mode & 07777;
        if (write_atomic(nvml, cnew.p, cnew.len, mode) != 0)
            ret = io_error("writing", nvml);
        else if (write_atomic(yaml, ynew.p, ynew.len, mode) != 0)
            ret = io_error("writing", yaml);
    }
    free(ytext);
    free(ctext);
    free(ynew.p);
    free(cnew.p);
    return ret;
}

nvmlReturn_t mock_reset_gpus(unsigned int count, const nvmlDevice_t *devices)
{
    unsigned int phys[MOCK_MAX_GPUS];
    if (devices == NULL || count == 0 || count > MOCK_MAX_GPUS)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < count; i++) {
        nvmlReturn_t ret = mock_check_device(devices[i]);
        if (ret != NVML_SUCCESS)
            return ret;
        if (!mock_physical_of(devices[i], &phys[i]))
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    const struct mock_node *n = mock_node();
    char yaml[MOCK_PATH_MAX], nvml[MOCK_PATH_MAX], dir[MOCK_PATH_MAX];
    snprintf(yaml, sizeof yaml, "%s", n->overrides_yaml);
    config_companion_path(yaml, nvml, sizeof nvml);
    snprintf(dir, sizeof dir, "%s", yaml);
    int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return io_error("opening the directory of", yaml);
    if (flock(fd, LOCK_EX) != 0) {
        nvmlReturn_t ret = io_error("locking the directory of", yaml);
        close(fd);
        return ret;
    }
    nvmlReturn_t ret = NVML_SUCCESS;
    for (unsigned int i = 0; i < count && ret == NVML_SUCCESS; i++)
        ret = drop_locked(yaml, nvml, phys[i]);
    close(fd);                                    /* releases the lock */
    return ret;
}
