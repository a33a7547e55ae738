/* Mokka's companion format, its one C home (mokka/engine/flatstate.py is the Python side).
 *
 * A companion is a flat document: a three-line header, then one `key value` line
 * per scalar of the document it stands for.
 *
 *     # mokka-nvml <kind> 2
 *     digest sha256:<64 hex digits: the SHA-256 of the YAML's bytes>
 *     body <bytes> crc32:<8 hex digits: the CRC-32 of those bytes>
 *     gpu.0.memory.total_bytes 85899345920
 *     gpu.0.name NVIDIA H100 80GB HBM3
 *     gpu.0.nvlink_links.len 18
 *     ...
 *
 * - kind: what the document is (struct flat_kind: state, overrides or
 *   events); 2 is the format's version, and a reader refuses any other ("run mokka
 *   compile --companion").
 * - digest: what the companion was compiled from, `X.yaml` beside `X.nvml`; one
 *   that no longer matches its YAML is stale.
 * - body: the exact length in bytes of everything after this line, and its CRC-32
 *   (the IEEE polynomial, as zlib computes it). A companion cut short or edited
 *   anywhere is refused whole: nothing of it is used. A checksum and not a second
 *   SHA-256: it guards against torn, truncated and hand-edited files, not against
 *   a forger (whoever can write the file can write a valid one, so every value is
 *   still bounded where it is used), at an eighth of SHA-256's cost in every
 *   process that loads the library.
 * - a body line: the key (at least one byte; its writers put no space, control
 *   character or DEL in one), one space, the value with `\`, newline and carriage return escaped as `\\`,
 *   `\n` and `\r` (no NUL anywhere). Keys are unique and sorted by their bytes
 *   (strcmp), so lookups are binary searches. A list L is `L.len` and its items
 *   `L.0`, `L.1`, ...; a mapping's keys are joined by dots.
 *
 * Reading (flat_load) treats both files as hostile: each is opened relative to a
 * directory descriptor with O_NOFOLLOW (a symbolic link as the last component is
 * refused, never followed) and O_NONBLOCK (a FIFO cannot hang the open), after an
 * lstat and again by fstat: regular files only, no larger than their bound (the
 * YAML's MOKKA_MAX_DOCUMENT_BYTES, the companion's its kind's), refused unread
 * when larger. The YAML is hashed in chunks and never kept; the companion is read
 * whole, and its header, version, digest, length, checksum, line syntax, order,
 * line count, list lengths and its kind's own check must all hold. A loaded flat is
 * immutable. Directory components are not checked here: the directory a path names
 * (MOCK_NVML_CONFIG's, the fixed places, a ConfigMap volume's `..data`) is the
 * operator's; inside the staged config directory the one directory the library enters,
 * `overrides/`, is opened by flat_open_dir (never followed) and read relative to it.
 *
 * Only Python writes companions (flatstate.py): the library's own documents, MIG
 * partitions and CUDA processes' records, have formats of their own.
 */
#ifndef MOKKA_FLAT_H
#define MOKKA_FLAT_H

#include <stddef.h>

#define FLAT_FORMAT_VERSION "2"

struct flat {
    char *buf;                 /* the file, NUL-separated after parsing */
    size_t len;                /* its size in bytes */
    const char **keys;         /* sorted, pointing into buf; each value follows its key's NUL */
    size_t n;
};

/* A list and the most items it may hold, `{"nvlink_links", 18}` (mokka_keys.h's LIST_BOUNDS_GPU);
 * `%u` in a key stands for an item number. */
struct flat_list {
    const char *key;
    unsigned long long most;
};

/* A kind of document: its header word, its bounds and what else it must hold. Every
 * list length (`….len`) of a key in `lists` must be a number no larger than its bound;
 * with `items` set ("gpu"), keys under `<items>.<n>.` are matched against `item_lists`
 * instead (relative to that prefix). A list in neither drives nothing. */
struct flat_kind {
    const char *name;
    size_t max_bytes;          /* the companion, header included */
    size_t max_lines;          /* its body lines */
    const struct flat_list *lists;        /* {NULL, 0}-terminated, or NULL */
    const char *items;
    const struct flat_list *item_lists;
    /* NULL, or what a document of this kind must also hold (its numbers): 1, or 0 and
     * a reason in `reason` (never a value read from the file). */
    int (*check)(const struct flat *f, char *reason, size_t size);
};

enum flat_status {
    FLAT_OK = 0,
    FLAT_YAML_MISSING,         /* the YAML does not exist */
    FLAT_MISSING,              /* the companion does not exist */
    FLAT_REFUSED,              /* a file is a link, not a regular file, too large or unreadable */
    FLAT_STALE,                /* the companion's digest is not the YAML's */
    FLAT_INVALID,              /* not a whole companion of this kind and version */
};

/* Why a load failed, for the one line its caller prints: which file (the caller's
 * `yaml` or `companion` pointer) and the reason; never a value read from a file. */
struct flat_why {
    const char *file;
    char reason[160];
    int yaml_blank;            /* the YAML was read and holds only white space */
};

/* Load `companion` (relative to `dirfd`, or absolute; AT_FDCWD for the working
 * directory) and check it against `yaml`, the document it was compiled from. On
 * success *out owns memory (flat_free); on failure *out is empty and *why says why. */
enum flat_status flat_load(int dirfd, const char *yaml, const char *companion, const struct flat_kind *kind,
                           struct flat *out, struct flat_why *why);
/* flat_load for a reader that must answer now (flat_settle.c): a pair caught between
 * its writer's two renames (stale, or one file missing) while the newer file is less
 * than a second old is loaded again as the files change, for a second at most; the
 * answer is then flat_load's. */
enum flat_status flat_load_settled(int dirfd, const char *yaml, const char *companion, const struct flat_kind *kind,
                                   struct flat *out, struct flat_why *why);
void flat_free(struct flat *f);

/* The value of `key`, or NULL. */
const char *flat_get(const struct flat *f, const char *key);
/* Whether any key starts with `prefix`. */
int flat_has_prefix(const struct flat *f, const char *prefix);
/* The value of the i-th key (i < f->n). */
const char *flat_value_at(const struct flat *f, size_t i);

/* A value that is a whole unsigned decimal (digits only, no sign or space, no
 * overflow) into *out: 1; anything else: 0, *out untouched. */
int flat_parse_u64(const char *v, unsigned long long *out);

/* A directory to load from: `path` (relative to dirfd) opened with its
 * last component never followed and never blocking; the descriptor, or -1 and errno. */
int flat_open_dir(int dirfd, const char *path);

#endif
