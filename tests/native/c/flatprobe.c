/* The companion format's C side driven directly (tests/native/flatprobe.py builds it
 * with native/nvml/flat.c, kinds.c, crc32.c and sha256.c under ASan and UBSan).
 *
 *     flatprobe load KIND YAML|- COMPANION    status, file, reason and every pair
 *     flatprobe batch KIND                    one line per "YAML|-<TAB>COMPANION" on stdin:
 *                                             status<TAB>file<TAB>reason
 *     flatprobe write DIR NAME KIND HEXKEY=HEXVALUE...   flat_write: "ok" or the errno's name
 *
 * KIND: a kind of kinds.c (state, overrides, topology, events) or `own`, a document of
 * the library's own (no YAML, at most 4096 bytes and 64 lines). Output lines are
 * tab-separated, keys and values in hex, so any byte survives the trip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flat.h"
#include "kinds.h"

static const struct flat_kind OWN = {"own", 0, 4096, 64, NULL, NULL, NULL, NULL};

static const char *STATUS[] = {"ok", "yaml_missing", "missing", "refused", "stale", "invalid"};

static const struct flat_kind *kind_named(const char *name)
{
    const struct flat_kind *all[] = {&KIND_STATE, &KIND_OVERRIDES, &KIND_TOPOLOGY, &KIND_EVENTS, &OWN};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    fprintf(stderr, "flatprobe: no kind %s\n", name);
    exit(2);
}

static void hex(const char *s)
{
    for (; *s; s++)
        printf("%02x", (unsigned char)*s);
}

static char *unhex(const char *s, size_t len)
{
    char *out = calloc(len / 2 + 1, 1);
    for (size_t i = 0; i + 1 < len; i += 2) {
        unsigned int byte;
        sscanf(s + i, "%2x", &byte);
        out[i / 2] = (char)byte;
    }
    return out;
}

static enum flat_status load(const struct flat_kind *kind, const char *yaml, const char *companion,
                             struct flat *f, struct flat_why *why)
{
    enum flat_status st = flat_load(AT_FDCWD, strcmp(yaml, "-") == 0 ? NULL : yaml, companion, kind, f, why);
    const char *file = why->file == NULL ? "" : why->file == companion ? "companion" : "yaml";
    printf("%s\t%s\t%s", STATUS[st], st == FLAT_OK ? "" : file, st == FLAT_OK ? "" : why->reason);
    return st;
}

static int cmd_load(const struct flat_kind *kind, const char *yaml, const char *companion)
{
    struct flat f;
    struct flat_why why;
    if (load(kind, yaml, companion, &f, &why) == FLAT_OK) {
        printf("\t%zu\n", f.n);
        for (size_t i = 0; i < f.n; i++) {
            hex(f.keys[i]);
            putchar('\t');
            hex(flat_value_at(&f, i));
            putchar('\n');
        }
        flat_free(&f);
    } else {
        printf("\t0\n");
    }
    return 0;
}

static int cmd_batch(const struct flat_kind *kind)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        char *tab = strchr(line, '\t');
        if (!tab)
            return 2;
        *tab = '\0';
        struct flat f;
        struct flat_why why;
        if (load(kind, line, tab + 1, &f, &why) == FLAT_OK)
            flat_free(&f);
        putchar('\n');
        fflush(stdout);
    }
    free(line);
    return 0;
}

static int cmd_write(const char *dir, const char *name, const struct flat_kind *kind, int argc, char **argv)
{
    struct flat_pair *pairs = calloc((size_t)argc + 1, sizeof *pairs);
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq)
            return 2;
        pairs[i].key = unhex(argv[i], (size_t)(eq - argv[i]));
        pairs[i].value = unhex(eq + 1, strlen(eq + 1));
    }
    int dirfd = flat_open_dir(AT_FDCWD, dir);
    int ok = dirfd >= 0 && flat_write(dirfd, name, kind, pairs, (size_t)argc) == 0;
    int saved = errno;
    printf("%s\n", ok ? "ok" : saved == EINVAL ? "EINVAL" : saved == EFBIG ? "EFBIG" : strerror(saved));
    if (dirfd >= 0)
        close(dirfd);
    for (int i = 0; i < argc; i++) {
        free((char *)pairs[i].key);
        free((char *)pairs[i].value);
    }
    free(pairs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "load") == 0)
        return cmd_load(kind_named(argv[2]), argv[3], argv[4]);
    if (argc == 3 && strcmp(argv[1], "batch") == 0)
        return cmd_batch(kind_named(argv[2]));
    if (argc >= 5 && strcmp(argv[1], "write") == 0)
        return cmd_write(argv[2], argv[3], kind_named(argv[4]), argc - 5, argv + 5);
    fprintf(stderr, "usage: flatprobe load KIND YAML|- COMPANION | batch KIND | write DIR NAME KIND K=V...\n");
    return 2;
}
