/* The companion format's C side driven directly (tests/native/flatprobe.py builds it
 * with native/nvml/engine/flat.c, kinds.c, crc32.c and sha256.c under ASan and UBSan).
 *
 *     flatprobe load KIND YAML COMPANION    status, file, reason and every pair
 *     flatprobe batch KIND                  one line per "YAML<TAB>COMPANION" on stdin:
 *                                           status<TAB>file<TAB>reason
 *
 * KIND: a kind of kinds.c (state, overrides, events). Output lines are
 * tab-separated, keys and values in hex, so any byte survives the trip.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flat.h"
#include "kinds.h"

static const char *STATUS[] = {"ok", "yaml_missing", "missing", "refused", "stale", "invalid"};

static const struct flat_kind *kind_named(const char *name)
{
    const struct flat_kind *all[] = {&KIND_STATE, &KIND_OVERRIDES, &KIND_EVENTS};
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

static enum flat_status load(const struct flat_kind *kind, const char *yaml, const char *companion,
                             struct flat *f, struct flat_why *why)
{
    enum flat_status st = flat_load(AT_FDCWD, yaml, companion, kind, f, why);
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

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "load") == 0)
        return cmd_load(kind_named(argv[2]), argv[3], argv[4]);
    if (argc == 3 && strcmp(argv[1], "batch") == 0)
        return cmd_batch(kind_named(argv[2]));
    fprintf(stderr, "usage: flatprobe load KIND YAML COMPANION | batch KIND\n");
    return 2;
}
