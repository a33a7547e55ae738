/* mig.nvml on disk (mig_file.c): read, parse, render and write the node's MIG
 * partitions. The one place that knows the file's bytes; mig_state.c holds the
 * meaning. */
#ifndef MOKKA_NVML_MIG_FILE_H
#define MOKKA_NVML_MIG_FILE_H

#include <stddef.h>

#include "engine/docfile.h"
#include "mig.h"

#define MIG_FILE_UUID_MAX 80
#define MIG_FILE_MAX_TEXT "256 KiB"             /* names.MIG_STATE_MAX_BYTES, for messages */

struct mig_file_ci {
    int present;
    unsigned int profile_id, start, size;
};

struct mig_file_gi {
    int present;
    unsigned int profile_id, start, size;
    struct mig_file_ci ci[MIG_CI_IDS];           /* by compute instance id */
};

struct mig_file_gpu {
    int has_mode;                                /* the file has this GPU */
    unsigned int current, pending;
    char uuid[MIG_FILE_UUID_MAX];                /* "" when not recorded */
    struct mig_file_gi gi[MIG_GI_IDS];           /* by GPU instance id */
};

struct mig_file {
    struct mig_file_gpu gpu[MOCK_MAX_GPUS];      /* by physical index */
};

/* What mig_file_read and mig_file_write answer besides NULL (success) and a reason. */
#define MIG_FILE_ABSENT DOCFILE_ABSENT
#define MIG_FILE_NO_PERMISSION DOCFILE_NO_PERMISSION

/* The file in directory `dirfd` (never followed, never waited on, bounded): NULL and
 * *text (malloc'd, NUL-terminated), MIG_FILE_ABSENT, or why it cannot be read. */
const char *mig_file_read(int dirfd, char **text, size_t *len);
/* The text of a file of a node of `count` GPUs into f (text is cut up): NULL, or
 * what is wrong with it, to follow "it" ("has no digest line"), or with *holds set
 * what it holds that it may not ("an unknown key"). */
const char *mig_file_parse(char *text, size_t len, unsigned int count, struct mig_file *f, int *holds);
/* f as the file in `dirfd`: a temp file beside it, then a rename. NULL, or why not. */
const char *mig_file_write(int dirfd, const struct mig_file *f, unsigned int count);

#endif
