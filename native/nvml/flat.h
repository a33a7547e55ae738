/* The companion reader: a compiled `X.nvml` beside `X.yaml` (mokka/core/flatstate.py).
 *
 *     # mokka-nvml <kind> 1
 *     digest sha256:<hex of the YAML's bytes>
 *     <key> <value>            sorted by key as bytes, values escaped
 *
 * flat_load reads the whole file, checks header, kind, version, order and the
 * digest against the YAML beside it, unescapes the values in place and keeps
 * an index; lookups are binary searches. A loaded flat is immutable.
 */
#ifndef MOKKA_FLAT_H
#define MOKKA_FLAT_H

#include <stddef.h>

struct flat {
    char *buf;                 /* the file, NUL-separated after parsing */
    size_t len;                /* its size in bytes */
    const char **keys;         /* sorted, pointing into buf */
    const char **vals;         /* unescaped, pointing into buf */
    size_t n;
};

enum flat_status {
    FLAT_OK = 0,
    FLAT_YAML_MISSING,         /* the YAML itself cannot be read */
    FLAT_MISSING,              /* no companion */
    FLAT_STALE,                /* the companion's digest is not the YAML's */
    FLAT_INVALID,              /* not a companion of this kind and version */
};

/* Load `companion` and check it against the bytes of `yaml`. On success *out
 * owns memory (flat_free); on failure *out is empty. */
enum flat_status flat_load(const char *yaml, const char *companion, const char *kind,
                           struct flat *out);
void flat_free(struct flat *f);

/* The value of `key`, or NULL. */
const char *flat_get(const struct flat *f, const char *key);
/* Whether any key starts with `prefix`. */
int flat_has_prefix(const struct flat *f, const char *prefix);

/* A value that is a whole unsigned decimal (digits only, no sign or space, no
 * overflow) into *out: 1; anything else: 0, *out untouched. */
int flat_parse_u64(const char *v, unsigned long long *out);

/* Read a whole file; NULL on error. *len gets its size; a NUL follows the bytes. */
char *flat_read_file(const char *path, size_t *len);

#endif
