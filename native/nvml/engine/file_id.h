/* What a reader remembers of a file it loaded, to tell at one stat whether it changed:
 * the overrides' scope files and the MIG state, which any process may replace. */
#ifndef MOKKA_FILE_ID_H
#define MOKKA_FILE_ID_H

#include <sys/types.h>

struct file_id {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    long long mtime_ns;
};

/* ``name`` in the directory ``dirfd`` (AT_FDCWD: a path), never through a link. */
struct file_id file_id_at(int dirfd, const char *name);
int file_id_same(const struct file_id *a, const struct file_id *b);
/* CLOCK_MONOTONIC in milliseconds: when a reader looks again. */
long long monotonic_ms(void);

#endif
