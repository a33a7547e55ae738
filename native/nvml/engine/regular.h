/* Opening a file a workload may have put anything in place of (regular.c). */
#ifndef MOKKA_NVML_REGULAR_H
#define MOKKA_NVML_REGULAR_H

#include <sys/stat.h>

/* A read-only descriptor of `name` (relative to `dirfd`) when it is a regular file, with
 * its stat in *st; else -1 with errno set: ENOENT and the like from the lookup, or
 * EFTYPE_NOT_REGULAR with *st saying what it is (a link is never followed). */
int regular_open(int dirfd, const char *name, struct stat *st);

#define EFTYPE_NOT_REGULAR EINVAL

#endif
